//! Lights and what surrounds the surfaces: the light clusters, the shadow layers Bevy rendered,
//! the environment (skybox, environment map, irradiance volumes) and fog. It may use `gpu` and
//! the layers below it.

pub(super) mod clusters;
pub(super) mod environment;
pub(super) mod shadows;
