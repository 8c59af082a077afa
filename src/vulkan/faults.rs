//! Test-only fault injection at the Vulkan calls where a real device can fail: the failure is
//! returned from the same call, with the `VkResult` a driver would give, so the code above it
//! runs its real error path (cleanup, fallback, report).
//!
//! A test arms one [`TileFault`] through `TileFaultInjection`; the tile pass hands it to the
//! context for one view ([`FaultHook::arm_for_view`]) and takes it back after
//! ([`FaultHook::view_done`]), recording whether it struck ([`FaultOutcome`]).

use std::sync::{
    Arc, Mutex, MutexGuard,
    atomic::{AtomicBool, Ordering},
};

/// Where an injected fault strikes.
#[doc(hidden)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TileFault {
    /// The next tile view fails before it starts (as if its render pass could not be created).
    FrameStart,
    /// Allocating memory for the attachment image named so (the frame graph's name, as in
    /// `VulkanAttachmentReport::name`) fails with `ERROR_OUT_OF_DEVICE_MEMORY`.
    AttachmentAllocation(String),
    /// Graphics pipeline creation fails (`ERROR_OUT_OF_DEVICE_MEMORY`) after this many
    /// successful creations in the view.
    PipelineCreation(u32),
    /// A descriptor set allocation finds its pool exhausted (`ERROR_OUT_OF_POOL_MEMORY`) after
    /// this many successful allocations in the view.
    DescriptorPoolExhausted(u32),
    /// The view's command buffer is recorded but never submitted.
    Submit,
    /// Every material descriptor pool is full for the rest of the view: a material descriptor
    /// set allocation fails (`ERROR_OUT_OF_POOL_MEMORY`) from each pool the crate has and from
    /// the new pool it then adds, as when the device is out of descriptor memory altogether.
    /// Strikes only where a material's set is (re)built in the view.
    MaterialPoolsExhausted,
    /// A Vulkan object creation or memory call of one kind fails with the `VkResult` a driver
    /// gives when out of memory, after this many successful calls of that kind in the view.
    Create(VulkanCall, u32),
}

/// The Vulkan calls that create the crate's objects (or memory), for [`TileFault::Create`].
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VulkanCall {
    /// `vkCreateImage` of an attachment image.
    Image,
    /// `vkCreateImageView`: attachment views, depth-only input views, shadow-map layer views.
    ImageView,
    /// `vkBindImageMemory` and `vkBindBufferMemory`.
    BindMemory,
    /// `vkCreateBuffer`: per-view buffers and their growth, material buffers, readback rings.
    Buffer,
    /// `vkCreateDescriptorPool`: a view's pool, a new material pool.
    DescriptorPool,
    /// `vkCreateRenderPass`.
    RenderPass,
    /// `vkCreateFramebuffer`.
    Framebuffer,
    /// `vkCreateSampler`: a material texture's sampler.
    Sampler,
    /// `vkAllocateMemory` of a lazily allocated (memoryless) block for a transient attachment;
    /// the crate falls back to ordinary device memory, so the view does not fail.
    LazyMemory,
    /// `vkCreateQueryPool` of a view's GPU timings: the view renders without them.
    QueryPool,
    /// `vkCreateDescriptorSetLayout` (the backend's start-up).
    DescriptorSetLayout,
    /// `vkCreatePipelineLayout` (the backend's start-up).
    PipelineLayout,
    /// `vkCreateShaderModule` (the backend's start-up).
    ShaderModule,
}

impl VulkanCall {
    /// The kinds a view's frame creates, for tests that sweep them (the start-up kinds are
    /// [`VulkanCall::STARTUP`]).
    pub const ALL: [VulkanCall; 10] = [
        VulkanCall::Image,
        VulkanCall::ImageView,
        VulkanCall::BindMemory,
        VulkanCall::Buffer,
        VulkanCall::DescriptorPool,
        VulkanCall::RenderPass,
        VulkanCall::Framebuffer,
        VulkanCall::Sampler,
        VulkanCall::LazyMemory,
        VulkanCall::QueryPool,
    ];

    /// The kinds only the backend's start-up creates (with buffers, memory bindings, samplers
    /// and one compute pipeline, `TileFault::PipelineCreation`).
    pub const STARTUP: [VulkanCall; 3] = [
        VulkanCall::DescriptorSetLayout,
        VulkanCall::PipelineLayout,
        VulkanCall::ShaderModule,
    ];
}

/// What became of the last armed fault.
#[doc(hidden)]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum FaultOutcome {
    /// Nothing armed yet.
    #[default]
    Idle,
    /// Armed, waiting for the next tile view.
    Armed,
    /// It struck the described call.
    Struck(String),
    /// A tile view ran without reaching the point (e.g. no pipeline was created): disarmed.
    Missed,
}

/// A call that an armed fault may strike.
#[derive(Clone, Copy, Debug)]
pub(crate) enum FaultPoint<'a> {
    FrameStart,
    AttachmentAllocation(&'a str),
    PipelineCreation,
    DescriptorSetAllocation,
    /// A material's set, from one of the material pools (a new one included).
    MaterialSetAllocation,
    Submit,
    Create(VulkanCall),
}

/// The state shared by the test's handle and the context: the armed fault and its outcome,
/// and the standing test settings.
#[derive(Debug, Default)]
pub(crate) struct FaultState {
    armed: Mutex<(Option<TileFault>, FaultOutcome)>,
    /// Transient attachments take the first device-local memory type the image accepts as if
    /// it were `LAZILY_ALLOCATED`, so that the memoryless path runs on a device without such a
    /// type (lavapipe, desktops): the memory is ordinary, the crate's code path is the tiler's.
    pub(crate) pretend_lazy_memory: AtomicBool,
    /// Teardown treats the GPU as never finishing the crate's last frame (a hung GPU), so the
    /// crate leaks its objects instead of waiting or destroying them in use.
    pub(crate) teardown_wait_expires: AtomicBool,
    /// The lighting subpass records no draw: what it should write (the light, or the output
    /// where it tone maps) is left as the render pass began it, undefined where it was
    /// `DONT_CARE`. A deliberate bug for the poison view's test.
    pub(crate) skip_lighting: AtomicBool,
    /// The armed fault outlives views that do not reach its point (never `Missed`).
    until_struck: AtomicBool,
}

impl FaultState {
    fn lock(&self) -> MutexGuard<'_, (Option<TileFault>, FaultOutcome)> {
        self.armed
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Arms `fault` for the next tile view.
    pub fn arm(&self, fault: TileFault) {
        self.until_struck.store(false, Ordering::Relaxed);
        *self.lock() = (Some(fault), FaultOutcome::Armed);
    }

    /// Arms `fault` for the views to come, until it strikes.
    pub fn arm_until_struck(&self, fault: TileFault) {
        self.until_struck.store(true, Ordering::Relaxed);
        *self.lock() = (Some(fault), FaultOutcome::Armed);
    }

    /// Takes back a fault that has not struck.
    pub fn disarm(&self) {
        self.lock().0 = None;
    }

    /// What became of the last armed fault.
    pub fn outcome(&self) -> FaultOutcome {
        self.lock().1.clone()
    }
}

/// The fault armed for the view being rendered, if any.
#[derive(Debug, Default)]
pub(crate) struct FaultHook {
    view: Mutex<Option<Arc<FaultState>>>,
    /// Set once a view ran with [`FaultState::teardown_wait_expires`]: read at teardown,
    /// after the last view.
    teardown_wait_expires: AtomicBool,
}

impl FaultHook {
    fn lock(&self) -> MutexGuard<'_, Option<Arc<FaultState>>> {
        self.view
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Lets `state`'s armed fault strike during the next view.
    pub fn arm_for_view(&self, state: Option<Arc<FaultState>>) {
        if let Some(state) = &state
            && state.teardown_wait_expires.load(Ordering::Relaxed)
        {
            self.teardown_wait_expires.store(true, Ordering::Relaxed);
        }
        *self.lock() = state;
    }

    /// Whether teardown must treat the GPU as never finishing the crate's last frame.
    pub fn teardown_wait_expires(&self) -> bool {
        self.teardown_wait_expires.load(Ordering::Relaxed)
    }

    /// Ends the view: a fault that did not strike is disarmed as missed (one that strikes
    /// every matching call is disarmed, as struck, once it has).
    pub fn view_done(&self) {
        if let Some(state) = self.lock().take() {
            if state.until_struck.load(Ordering::Relaxed) {
                return;
            }
            let mut guard = state.lock();
            if guard.0.take().is_some() && guard.1 == FaultOutcome::Armed {
                guard.1 = FaultOutcome::Missed;
            }
        }
    }

    /// Whether the call at `point` fails now (an armed fault matches it); the fault is then
    /// spent. A counting fault counts the matching calls it lets through.
    pub fn strike(&self, point: FaultPoint) -> bool {
        let hook = self.lock();
        let Some(state) = hook.as_ref() else {
            return false;
        };
        let mut guard = state.lock();
        let strikes = match (&mut guard.0, point) {
            (Some(TileFault::FrameStart), FaultPoint::FrameStart)
            | (Some(TileFault::Submit), FaultPoint::Submit) => true,
            (Some(TileFault::AttachmentAllocation(name)), FaultPoint::AttachmentAllocation(at)) => {
                name == at
            }
            (Some(TileFault::Create(call, skip)), FaultPoint::Create(at)) if *call == at => {
                if *skip == 0 {
                    true
                } else {
                    *skip -= 1;
                    false
                }
            }
            (Some(TileFault::PipelineCreation(skip)), FaultPoint::PipelineCreation)
            | (
                Some(TileFault::DescriptorPoolExhausted(skip)),
                FaultPoint::DescriptorSetAllocation,
            ) => {
                if *skip == 0 {
                    true
                } else {
                    *skip -= 1;
                    false
                }
            }
            (Some(TileFault::MaterialPoolsExhausted), FaultPoint::MaterialSetAllocation) => {
                // Not spent: every pool stays full until the view is done.
                guard.1 = FaultOutcome::Struck(format!("{point:?} (every material pool)"));
                bevy::log::debug!("bevy_tile_deferred: injected fault at {point:?}");
                return true;
            }
            _ => false,
        };
        if strikes {
            let fault = guard.0.take();
            guard.1 = FaultOutcome::Struck(format!("{point:?} ({fault:?})"));
            bevy::log::debug!("bevy_tile_deferred: injected fault at {point:?}");
        }
        strikes
    }

    /// `Err(ERROR_OUT_OF_DEVICE_MEMORY)` where an armed [`TileFault::Create`] fails this call of
    /// `call`'s kind; call it just before the Vulkan call, in its place.
    pub fn fail(&self, call: VulkanCall) -> Result<(), ash::vk::Result> {
        if self.strike(FaultPoint::Create(call)) {
            Err(ash::vk::Result::ERROR_OUT_OF_DEVICE_MEMORY)
        } else {
            Ok(())
        }
    }

    /// Whether the view being rendered records no lighting draw ([`FaultState::skip_lighting`]).
    pub fn skips_lighting(&self) -> bool {
        self.lock()
            .as_ref()
            .is_some_and(|state| state.skip_lighting.load(Ordering::Relaxed))
    }

    /// Whether the view being rendered treats device-local memory as lazily allocated
    /// ([`FaultState::pretend_lazy_memory`]).
    pub fn pretends_lazy_memory(&self) -> bool {
        self.lock()
            .as_ref()
            .is_some_and(|state| state.pretend_lazy_memory.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counting_fault_lets_calls_through_then_strikes_once() {
        let state = Arc::new(FaultState::default());
        let hook = FaultHook::default();
        state.arm(TileFault::PipelineCreation(2));
        assert!(!hook.strike(FaultPoint::PipelineCreation), "not installed");
        hook.arm_for_view(Some(state.clone()));
        assert!(!hook.strike(FaultPoint::DescriptorSetAllocation));
        assert!(!hook.strike(FaultPoint::PipelineCreation));
        assert!(!hook.strike(FaultPoint::PipelineCreation));
        assert!(hook.strike(FaultPoint::PipelineCreation));
        assert!(!hook.strike(FaultPoint::PipelineCreation), "spent");
        assert!(matches!(state.outcome(), FaultOutcome::Struck(_)));
        hook.view_done();
        assert!(matches!(state.outcome(), FaultOutcome::Struck(_)));
    }

    #[test]
    fn exhausted_material_pools_fail_every_material_set_of_the_view_only() {
        let state = Arc::new(FaultState::default());
        let hook = FaultHook::default();
        state.arm(TileFault::MaterialPoolsExhausted);
        hook.arm_for_view(Some(state.clone()));
        assert!(
            !hook.strike(FaultPoint::DescriptorSetAllocation),
            "a view set"
        );
        assert!(hook.strike(FaultPoint::MaterialSetAllocation));
        assert!(
            hook.strike(FaultPoint::MaterialSetAllocation),
            "the new pool too"
        );
        hook.view_done();
        assert!(matches!(state.outcome(), FaultOutcome::Struck(_)));
        hook.arm_for_view(Some(state.clone()));
        assert!(!hook.strike(FaultPoint::MaterialSetAllocation), "disarmed");
        hook.view_done();
        assert!(matches!(state.outcome(), FaultOutcome::Struck(_)));
    }

    #[test]
    fn an_attachment_fault_strikes_only_its_attachment_and_misses_are_reported() {
        let state = Arc::new(FaultState::default());
        let hook = FaultHook::default();
        state.arm(TileFault::AttachmentAllocation("albedo".into()));
        assert_eq!(state.outcome(), FaultOutcome::Armed);
        hook.arm_for_view(Some(state.clone()));
        assert!(!hook.strike(FaultPoint::AttachmentAllocation("normal")));
        hook.view_done();
        assert_eq!(state.outcome(), FaultOutcome::Missed);
        hook.arm_for_view(Some(state.clone()));
        assert!(
            !hook.strike(FaultPoint::AttachmentAllocation("albedo")),
            "disarmed"
        );
    }

    #[test]
    fn a_creation_fault_counts_only_calls_of_its_kind() {
        let state = Arc::new(FaultState::default());
        let hook = FaultHook::default();
        state.arm(TileFault::Create(VulkanCall::Buffer, 1));
        hook.arm_for_view(Some(state.clone()));
        let buffer = FaultPoint::Create(VulkanCall::Buffer);
        let image = FaultPoint::Create(VulkanCall::Image);
        assert!(!hook.strike(image));
        assert!(!hook.strike(buffer), "the first buffer is let through");
        assert!(!hook.strike(image));
        assert!(!hook.strike(FaultPoint::PipelineCreation));
        assert!(hook.strike(buffer));
        assert!(!hook.strike(buffer), "spent");
        hook.view_done();
        assert!(matches!(state.outcome(), FaultOutcome::Struck(s) if s.contains("Buffer")));
    }

    #[test]
    fn pretended_lazy_memory_holds_only_while_a_view_is_armed() {
        let state = Arc::new(FaultState::default());
        let hook = FaultHook::default();
        state.pretend_lazy_memory.store(true, Ordering::Relaxed);
        assert!(!hook.pretends_lazy_memory(), "no view");
        hook.arm_for_view(Some(state.clone()));
        assert!(hook.pretends_lazy_memory());
        hook.view_done();
        assert!(!hook.pretends_lazy_memory());
    }

    #[test]
    fn a_fault_armed_until_struck_outlives_views_that_miss_it() {
        let state = Arc::new(FaultState::default());
        let hook = FaultHook::default();
        state.arm_until_struck(TileFault::Create(VulkanCall::Buffer, 0));
        for _ in 0..3 {
            hook.arm_for_view(Some(state.clone()));
            assert!(!hook.strike(FaultPoint::Create(VulkanCall::Image)));
            hook.view_done();
            assert_eq!(state.outcome(), FaultOutcome::Armed);
        }
        hook.arm_for_view(Some(state.clone()));
        assert!(hook.strike(FaultPoint::Create(VulkanCall::Buffer)));
        hook.view_done();
        assert!(matches!(state.outcome(), FaultOutcome::Struck(_)));
        // A plain `arm` afterwards misses again.
        state.arm(TileFault::FrameStart);
        hook.arm_for_view(Some(state.clone()));
        hook.view_done();
        assert_eq!(state.outcome(), FaultOutcome::Missed);
    }
}
