//! Test-only fault injection at the Vulkan calls where a real device can fail: the failure is
//! returned from the same call, with the `VkResult` a driver would give, so the code above it
//! runs its real error path (cleanup, fallback, report).
//!
//! A test arms one [`TileFault`] through `TileFaultInjection`; the tile pass hands it to the
//! context for one view ([`FaultHook::arm_for_view`]) and takes it back after
//! ([`FaultHook::view_done`]), recording whether it struck ([`FaultOutcome`]).

use std::sync::{Arc, Mutex, MutexGuard};

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
}

/// The state shared by the test's handle and the context.
#[derive(Debug, Default)]
pub(crate) struct FaultState(Mutex<(Option<TileFault>, FaultOutcome)>);

impl FaultState {
    fn lock(&self) -> MutexGuard<'_, (Option<TileFault>, FaultOutcome)> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Arms `fault` for the next tile view.
    pub fn arm(&self, fault: TileFault) {
        *self.lock() = (Some(fault), FaultOutcome::Armed);
    }

    /// What became of the last armed fault.
    pub fn outcome(&self) -> FaultOutcome {
        self.lock().1.clone()
    }
}

/// The fault armed for the view being rendered, if any.
#[derive(Debug, Default)]
pub(crate) struct FaultHook(Mutex<Option<Arc<FaultState>>>);

impl FaultHook {
    fn lock(&self) -> MutexGuard<'_, Option<Arc<FaultState>>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Lets `state`'s armed fault strike during the next view.
    pub fn arm_for_view(&self, state: Option<Arc<FaultState>>) {
        *self.lock() = state;
    }

    /// Ends the view: a fault that did not strike is disarmed as missed (one that strikes
    /// every matching call is disarmed, as struck, once it has).
    pub fn view_done(&self) {
        if let Some(state) = self.lock().take() {
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
}
