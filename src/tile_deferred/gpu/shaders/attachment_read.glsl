// How a pass reads what an earlier pass of the frame wrote at this pixel.
//
// Merged (the tile tiers): the earlier pass is an earlier subpass of the same render pass and the
// attachment is an input attachment, read on tile with subpassLoad. Unmerged (the debug tier
// whose passes are separate render passes; its shader variants are compiled with
// -D SAMPLED_ATTACHMENTS): the attachment was stored to memory and is bound as a texture, fetched at
// this pixel (texelFetch at the integer pixel: no filtering, the same value subpassLoad returns).
// gl_FragCoord is in framebuffer coordinates in both cases (a render area with an offset reads the
// texture at the same coordinates), and flooring it gives the pixel under sample-rate shading too.
//
// TILE_ATTACHMENT(set, binding, input_index, name) declares one such attachment; with MSAA the
// attachment has the pass's N samples and TILE_READ_SAMPLE(name, i) reads sample i, without it
// TILE_READ(name) reads the pixel.

#ifndef TILE_DEFERRED_ATTACHMENT_READ_GLSL
#define TILE_DEFERRED_ATTACHMENT_READ_GLSL

#ifdef SAMPLED_ATTACHMENTS
#ifdef MSAA
#define TILE_ATTACHMENT(set_, binding_, input_index_, name_) \
    layout(set = set_, binding = binding_) uniform sampler2DMS name_
#define TILE_READ_SAMPLE(name_, sample_) texelFetch(name_, ivec2(gl_FragCoord.xy), sample_)
#else
#define TILE_ATTACHMENT(set_, binding_, input_index_, name_) \
    layout(set = set_, binding = binding_) uniform sampler2D name_
#define TILE_READ(name_) texelFetch(name_, ivec2(gl_FragCoord.xy), 0)
#endif
#else
#ifdef MSAA
#define TILE_ATTACHMENT(set_, binding_, input_index_, name_) \
    layout(input_attachment_index = input_index_, set = set_, binding = binding_) \
    uniform subpassInputMS name_
#define TILE_READ_SAMPLE(name_, sample_) subpassLoad(name_, sample_)
#else
#define TILE_ATTACHMENT(set_, binding_, input_index_, name_) \
    layout(input_attachment_index = input_index_, set = set_, binding = binding_) \
    uniform subpassInput name_
#define TILE_READ(name_) subpassLoad(name_)
#endif
#endif

#endif // TILE_DEFERRED_ATTACHMENT_READ_GLSL
