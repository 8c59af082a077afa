//! Stage 7, dependencies: the subpass and external dependencies derived from
//! the hazards between uses.

use super::*;

#[test]
fn deferred_dependencies_are_exact() {
    let f = compile(&deferred(HD, 1), &DeviceCaps::mali_valhall()).unwrap();
    let deps = &f.native_passes[0].dependencies;
    let find = |src, dst| {
        deps.iter()
            .find(|d| d.src == src && d.dst == dst)
            .unwrap_or_else(|| panic!("no {src:?} -> {dst:?} in {deps:#?}"))
    };
    use SubpassIndex::{External, Index};
    let tests = PipelineStages::EARLY_FRAGMENT_TESTS | PipelineStages::LATE_FRAGMENT_TESTS;
    let d01 = find(Index(0), Index(1));
    assert_eq!(
        d01.src_stages,
        PipelineStages::COLOR_ATTACHMENT_OUTPUT | tests
    );
    assert_eq!(
        d01.src_access,
        AccessMask::COLOR_ATTACHMENT_WRITE | AccessMask::DEPTH_STENCIL_ATTACHMENT_WRITE
    );
    assert_eq!(d01.dst_stages, PipelineStages::FRAGMENT_SHADER);
    assert_eq!(d01.dst_access, AccessMask::INPUT_ATTACHMENT_READ);
    assert!(d01.by_region);
    let d12 = find(Index(1), Index(2));
    assert_eq!(d12.src_stages, PipelineStages::COLOR_ATTACHMENT_OUTPUT);
    assert_eq!(d12.src_access, AccessMask::COLOR_ATTACHMENT_WRITE);
    assert_eq!(d12.dst_stages, PipelineStages::FRAGMENT_SHADER);
    assert_eq!(d12.dst_access, AccessMask::INPUT_ATTACHMENT_READ);
    assert!(d12.by_region);
    // Nobody reads an input attachment through SHADER_READ.
    assert!(
        deps.iter()
            .all(|d| !d.dst_access.contains(AccessMask::SHADER_READ))
    );
    // Swapchain: wait where the acquire semaphore waits, write it, then
    // hand the stored image on.
    let ext2 = find(External, Index(2));
    assert_eq!(ext2.src_stages, PipelineStages::COLOR_ATTACHMENT_OUTPUT);
    assert_eq!(ext2.src_access, AccessMask::NONE);
    assert_eq!(ext2.dst_stages, PipelineStages::COLOR_ATTACHMENT_OUTPUT);
    assert_eq!(ext2.dst_access, AccessMask::COLOR_ATTACHMENT_WRITE);
    assert!(!ext2.by_region);
    let out = find(Index(2), External);
    assert_eq!(out.src_stages, PipelineStages::COLOR_ATTACHMENT_OUTPUT);
    assert_eq!(out.src_access, AccessMask::COLOR_ATTACHMENT_WRITE);
    assert_eq!(out.dst_stages, PipelineStages::BOTTOM_OF_PIPE);
    // Depth: cleared in the early tests of subpass 0.
    let ext0 = find(External, Index(0));
    assert!(
        ext0.dst_stages
            .contains(PipelineStages::EARLY_FRAGMENT_TESTS)
    );
    assert!(
        ext0.dst_access
            .contains(AccessMask::DEPTH_STENCIL_ATTACHMENT_WRITE)
    );
    // Destination stages are never earlier than the fragment stage.
    for d in deps {
        assert!(
            !d.dst_stages
                .intersects(PipelineStages::TOP_OF_PIPE | PipelineStages::VERTEX_SHADER)
        );
    }
    // Stable order: external-in first, external-out last.
    assert_eq!(deps.first().unwrap().src, External);
    assert_eq!(deps.last().unwrap().dst, External);
}

#[test]
fn programmable_blending_gets_a_self_dependency() {
    let mut g = FrameGraph::new(HD);
    let mut c = g.import_attachment("c", rgba8(), ImportParams::history());
    g.add_raster_pass("blend")
        .input(&c)
        .color(&mut c, Access::ReadWrite, None)
        .finish()
        .unwrap();
    let f = compile(&g, &DeviceCaps::mali_valhall()).unwrap();
    let d = f.native_passes[0]
        .dependencies
        .iter()
        .find(|d| d.src == SubpassIndex::Index(0) && d.dst == SubpassIndex::Index(0))
        .unwrap();
    assert!(d.by_region);
    assert_eq!(d.dst_access, AccessMask::INPUT_ATTACHMENT_READ);
}
