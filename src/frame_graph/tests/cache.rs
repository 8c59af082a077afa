//! The compile cache: hits for an identical graph and caps, misses otherwise.

use super::*;

#[test]
fn cache_hits_for_a_rebuilt_identical_graph() {
    let caps = DeviceCaps::mali_valhall();
    let mut cache = FrameGraphCache::new();
    let first = cache.compile(&deferred(HD, 1), &caps).unwrap().clone();
    let second = cache.compile(&deferred(HD, 1), &caps).unwrap().clone();
    assert_eq!(first, second);
    assert_eq!((cache.hits(), cache.misses()), (1, 1));
    // A different graph, then different caps, recompile.
    let _ = cache
        .compile(&deferred(Extent::new(1280, 720), 1), &caps)
        .unwrap();
    assert_eq!(cache.misses(), 2);
    let apart = cache
        .compile(
            &deferred(Extent::new(1280, 720), 1),
            &caps.with_merging(false),
        )
        .unwrap();
    assert_eq!(apart.native_passes.len(), 3);
    assert_eq!(cache.misses(), 3);
    cache.invalidate();
    assert!(cache.cached().is_none());
    // Errors are returned, not cached.
    let mut bad = FrameGraph::new(HD);
    let h = bad.create_attachment("h", rgba8());
    let _ = bad.add_raster_pass("p").input(&h).finish();
    assert!(cache.compile(&bad, &caps).is_err());
    assert!(cache.cached().is_none());
}
