// The fragment shader of the `custom_material` example's `QuantizeExtension`, Bevy's
// `extended_material.wgsl` (forward path): the `StandardMaterial`'s lighting, quantised.
#import bevy_pbr::{
    pbr_fragment::pbr_input_from_standard_material,
    pbr_functions::{alpha_discard, apply_pbr_lighting, main_pass_post_lighting_processing},
    forward_io::{VertexOutput, FragmentOutput},
}

struct QuantizeExtension {
    quantize_steps: u32,
}

@group(#{MATERIAL_BIND_GROUP}) @binding(100) var<uniform> extension: QuantizeExtension;

@fragment
fn fragment(in: VertexOutput, @builtin(front_facing) is_front: bool) -> FragmentOutput {
    var pbr_input = pbr_input_from_standard_material(in, is_front);
    pbr_input.material.base_color.b = pbr_input.material.base_color.r;
    pbr_input.material.base_color = alpha_discard(pbr_input.material, pbr_input.material.base_color);
    var out: FragmentOutput;
    out.color = apply_pbr_lighting(pbr_input);
    let steps = f32(extension.quantize_steps);
    out.color = vec4<f32>(vec4<u32>(out.color * steps)) / steps;
    out.color = main_pass_post_lighting_processing(pbr_input, out.color);
    out.color = out.color * 2.0;
    return out;
}
