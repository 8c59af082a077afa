//! The crate's own Vulkan views of Bevy's shadow textures, cached while Bevy keeps each
//! texture (which layer of them each light uses is `lighting::shadows`).

use crate::tile_deferred::error::{TileError, TileResult};
use crate::vulkan::{Graveyard, LiveObjects, VulkanCall, VulkanContext};
use ash::vk;
use bevy::{
    pbr::ViewShadowBindings,
    render::render_resource::{Texture, TextureId},
};
use wgpu::hal::api::Vulkan;

/// The crate's own views of Bevy's two shadow textures, which the view sets bind (set 0
/// bindings 3 and 4). Bevy makes new wgpu views of them every frame but keeps the textures
/// while their size holds (its texture cache), so a view made here lasts as long as the
/// texture and the view sets are rewritten only when a texture changes. Each view keeps a clone
/// of its texture, so the image outlives every view of it.
#[derive(Default)]
pub(crate) struct ShadowMapViews {
    point: Option<ShadowMapView>,
    directional: Option<ShadowMapView>,
}

struct ShadowMapView {
    texture_id: TextureId,
    texture: Texture,
    view: vk::ImageView,
}

/// Which of the two textures a view is of.
#[derive(Clone, Copy)]
enum ShadowTexture {
    /// Point lights: a cube array (6 layers per light).
    PointCubes,
    /// Directional cascades and spot lights: a 2D array.
    DirectionalAndSpot,
}

impl ShadowMapViews {
    /// The views of this frame's shadow textures (point cubes, directional and spot layers), made
    /// anew where Bevy's texture changed; the replaced ones are retired behind the frames that
    /// may still sample them.
    pub(crate) fn update(
        &mut self,
        context: &VulkanContext,
        graveyard: &mut Graveyard,
        bindings: &ViewShadowBindings,
    ) -> TileResult<[vk::ImageView; 2]> {
        let point = Self::current(
            &mut self.point,
            context,
            graveyard,
            &bindings.point_light_depth_texture,
            ShadowTexture::PointCubes,
        )?;
        let directional = Self::current(
            &mut self.directional,
            context,
            graveyard,
            &bindings.directional_light_depth_texture,
            ShadowTexture::DirectionalAndSpot,
        )?;
        Ok([point, directional])
    }

    fn current(
        slot: &mut Option<ShadowMapView>,
        context: &VulkanContext,
        graveyard: &mut Graveyard,
        texture: &Texture,
        kind: ShadowTexture,
    ) -> TileResult<vk::ImageView> {
        if let Some(current) = slot.as_ref().filter(|v| v.texture_id == texture.id()) {
            return Ok(current.view);
        }
        let view = create_view(context, texture, kind)?;
        let fresh = ShadowMapView {
            texture_id: texture.id(),
            texture: texture.clone(),
            view,
        };
        if let Some(old) = slot.replace(fresh) {
            graveyard.retire(Box::new(move |c: &VulkanContext| old.destroy(c)));
        }
        Ok(view)
    }

    /// Destroys the views (and releases the textures). The GPU must be done with them.
    pub(crate) fn destroy(&mut self, context: &VulkanContext) {
        for view in [self.point.take(), self.directional.take()]
            .into_iter()
            .flatten()
        {
            view.destroy(context);
        }
    }
}

impl ShadowMapView {
    fn destroy(self, context: &VulkanContext) {
        // SAFETY: made by `create_view` on this device; the caller says the GPU is done with it.
        unsafe { context.device.destroy_image_view(self.view, None) };
        LiveObjects::destroyed(&context.live.image_views);
        drop(self.texture);
    }
}

/// A depth view of every layer of one of Bevy's shadow textures, as the lighting subpass
/// samples it.
fn create_view(
    context: &VulkanContext,
    texture: &Texture,
    kind: ShadowTexture,
) -> TileResult<vk::ImageView> {
    let layers = texture.depth_or_array_layers();
    let view_type = match kind {
        ShadowTexture::PointCubes if layers.is_multiple_of(6) => vk::ImageViewType::CUBE_ARRAY,
        ShadowTexture::PointCubes => {
            return Err(TileError::Missing {
                step: "finding whole cubes in Bevy's point-light shadow texture",
            });
        }
        ShadowTexture::DirectionalAndSpot => vk::ImageViewType::TYPE_2D_ARRAY,
    };
    // SAFETY: the handle is read, not kept past the texture's clone (which the view holds).
    let image = unsafe { texture.as_hal::<Vulkan>().map(|t| t.raw_handle()) }.ok_or(
        TileError::Missing {
            step: "reading Bevy's shadow texture",
        },
    )?;
    let format =
        crate::vulkan::conv::depth_format_of(texture.format()).ok_or(TileError::Missing {
            step: "reading the format of Bevy's shadow texture",
        })?;
    let info = vk::ImageViewCreateInfo::default()
        .image(image)
        .view_type(view_type)
        .format(format)
        .subresource_range(vk::ImageSubresourceRange {
            aspect_mask: vk::ImageAspectFlags::DEPTH,
            base_mip_level: 0,
            level_count: 1,
            base_array_layer: 0,
            layer_count: layers,
        });
    context
        .faults
        .fail(VulkanCall::ImageView)
        .map_err(|error| TileError::vulkan("creating a shadow map view", error))?;
    // SAFETY: a depth view of every layer of a live depth texture Bevy made with
    // TEXTURE_BINDING (sampled) usage; wgpu creates square 6n-layer textures cube-compatible.
    let view = unsafe { context.device.create_image_view(&info, None) }
        .map_err(|error| TileError::vulkan("creating a shadow map view", error))?;
    LiveObjects::created(&context.live.image_views);
    Ok(view)
}
