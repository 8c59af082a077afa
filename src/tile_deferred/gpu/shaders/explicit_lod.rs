//! Depth-compare lookups at level of detail 0, as Bevy's `textureSampleCompareLevel` makes them.
//!
//! Bevy samples every shadow map with `textureSampleCompareLevel(.., 0)`: SPIR-V's
//! `OpImageSampleDrefExplicitLod` with `Lod 0.0`. GLSL has no such lookup for the array and cube
//! shadow samplers the maps are bound as (`GL_EXT_texture_shadow_lod` adds it, and Debian's
//! glslang predates it), so `shadows.glsl` samples them with an implicit level of detail, which
//! glslang compiles to `OpImageSampleDrefImplicitLod`. Inside the cluster's light loop that has
//! two costs: the derivatives an implicit lookup takes are undefined in non-uniform control flow
//! (harmless only because the maps have one mip level), and a GPU pays to compute them for every
//! tap of every shadow filter. [`explicit_lod_depth_compares`] rewrites each such lookup to the
//! instruction Bevy's shader has, when a module is created, so the checked-in SPIR-V stays exactly
//! what glslang makes of the sources.

use std::fmt;

const MAGIC: u32 = 0x0723_0203;
const HEADER_WORDS: usize = 5;
/// The header word holding the id bound (every id is below it).
const BOUND_WORD: usize = 3;

const OP_TYPE_FLOAT: u16 = 22;
const OP_CONSTANT: u16 = 43;
const OP_IMAGE_SAMPLE_DREF_IMPLICIT_LOD: u16 = 89;
const OP_IMAGE_SAMPLE_DREF_EXPLICIT_LOD: u16 = 90;

/// Image operands an implicit lookup may carry that an explicit one may not.
const IMAGE_OPERANDS_BIAS: u32 = 0x1;
const IMAGE_OPERANDS_LOD: u32 = 0x2;
const IMAGE_OPERANDS_MIN_LOD: u32 = 0x80;

/// Why a module could not be rewritten.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ExplicitLodError {
    /// Not a SPIR-V module: too short, or the magic number is wrong.
    NotSpirv,
    /// An instruction's word count is 0 or runs past the end of the module.
    Truncated { word: usize },
    /// A lookup at `word` carries a bias or a minimum level, which mean nothing at an explicit
    /// level (the shaders have none; a new one would need its own rewrite).
    ImplicitOnlyOperand { word: usize, operands: u32 },
    /// A lookup's result type at `word` is not a 32-bit float declared before it.
    NotFloatResult { word: usize },
}

impl fmt::Display for ExplicitLodError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotSpirv => write!(f, "not a SPIR-V module"),
            Self::Truncated { word } => write!(f, "the instruction at word {word} is truncated"),
            Self::ImplicitOnlyOperand { word, operands } => write!(
                f,
                "the depth-compare lookup at word {word} has image operands {operands:#x}: a bias \
                 or a minimum level has no explicit-level form"
            ),
            Self::NotFloatResult { word } => write!(
                f,
                "the depth-compare lookup at word {word} does not return a 32-bit float"
            ),
        }
    }
}

impl std::error::Error for ExplicitLodError {}

/// `module` with every `OpImageSampleDrefImplicitLod` turned into `OpImageSampleDrefExplicitLod`
/// at `Lod 0.0`, and the number rewritten. A float constant 0.0 is added when the module has
/// none. A module without such lookups comes back unchanged.
pub(crate) fn explicit_lod_depth_compares(
    module: &[u32],
) -> Result<(Vec<u32>, usize), ExplicitLodError> {
    if module.len() < HEADER_WORDS || module[0] != MAGIC {
        return Err(ExplicitLodError::NotSpirv);
    }
    let instructions = instructions(module)?;
    let lookups: Vec<usize> = instructions
        .iter()
        .copied()
        .filter(|&(_, opcode, _)| opcode == OP_IMAGE_SAMPLE_DREF_IMPLICIT_LOD)
        .map(|(at, _, _)| at)
        .collect();
    if lookups.is_empty() {
        return Ok((module.to_vec(), 0));
    }

    // Every lookup returns the same 32-bit float type: find it, and its constant 0.0.
    let float32 = instructions
        .iter()
        .find(|&&(at, opcode, count)| opcode == OP_TYPE_FLOAT && count >= 3 && module[at + 2] == 32)
        .map(|&(at, _, _)| module[at + 1])
        .ok_or(ExplicitLodError::NotFloatResult { word: lookups[0] })?;
    if let Some(&at) = lookups.iter().find(|&&at| module[at + 1] != float32) {
        return Err(ExplicitLodError::NotFloatResult { word: at });
    }
    let existing_zero = instructions
        .iter()
        .find(|&&(at, opcode, count)| {
            opcode == OP_CONSTANT && count == 4 && module[at + 1] == float32 && module[at + 3] == 0
        })
        .map(|&(at, _, _)| module[at + 2]);

    let mut out = Vec::with_capacity(module.len() + 2 * lookups.len() + 4);
    out.extend_from_slice(&module[..HEADER_WORDS]);
    // Without a constant 0.0, the module's bound becomes its id, and the bound grows by one.
    let zero = existing_zero.unwrap_or(module[BOUND_WORD]);
    if existing_zero.is_none() {
        out[BOUND_WORD] += 1;
    }
    for &(at, opcode, count) in &instructions {
        let words = &module[at..at + count];
        if opcode == OP_IMAGE_SAMPLE_DREF_IMPLICIT_LOD {
            out.extend(explicit_lookup(words, zero, at)?);
            continue;
        }
        out.extend_from_slice(words);
        if existing_zero.is_none() && opcode == OP_TYPE_FLOAT && words[1] == float32 {
            // Constants may follow their type anywhere in the declarations.
            out.extend_from_slice(&[(4 << 16) | u32::from(OP_CONSTANT), float32, zero, 0]);
        }
    }
    Ok((out, lookups.len()))
}

/// (word offset, opcode, word count) of each instruction after the header.
fn instructions(module: &[u32]) -> Result<Vec<(usize, u16, usize)>, ExplicitLodError> {
    let mut found = Vec::new();
    let mut at = HEADER_WORDS;
    while at < module.len() {
        let count = (module[at] >> 16) as usize;
        if count == 0 || at + count > module.len() {
            return Err(ExplicitLodError::Truncated { word: at });
        }
        found.push((at, (module[at] & 0xffff) as u16, count));
        at += count;
    }
    Ok(found)
}

/// One implicit lookup (result type, result, sampled image, coordinate, reference, then optional
/// image operands) as the explicit one at level `zero`. The Lod operand comes first among the
/// operands: they follow the order of their bits, and Bias, the only lower bit, is refused.
fn explicit_lookup(words: &[u32], zero: u32, at: usize) -> Result<Vec<u32>, ExplicitLodError> {
    const FIXED: usize = 6;
    if words.len() < FIXED {
        return Err(ExplicitLodError::Truncated { word: at });
    }
    let operands = words.get(FIXED).copied().unwrap_or(0);
    if operands & (IMAGE_OPERANDS_BIAS | IMAGE_OPERANDS_MIN_LOD | IMAGE_OPERANDS_LOD) != 0 {
        return Err(ExplicitLodError::ImplicitOnlyOperand { word: at, operands });
    }
    let mut explicit = Vec::with_capacity(words.len() + 2);
    explicit.extend_from_slice(&words[..FIXED]);
    explicit.push(operands | IMAGE_OPERANDS_LOD);
    explicit.push(zero);
    explicit.extend_from_slice(words.get(FIXED + 1..).unwrap_or(&[]));
    explicit[0] = ((explicit.len() as u32) << 16) | u32::from(OP_IMAGE_SAMPLE_DREF_EXPLICIT_LOD);
    Ok(explicit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tile_deferred::gpu::shaders::{VARIANTS, tests as shaders_tests};

    fn words(spirv: &[u8]) -> Vec<u32> {
        ash::util::read_spv(&mut std::io::Cursor::new(spirv)).unwrap()
    }

    fn count(module: &[u32], opcode: u16) -> usize {
        instructions(module)
            .unwrap()
            .iter()
            .filter(|&&(_, op, _)| op == opcode)
            .count()
    }

    /// A module of the header, `OpTypeFloat 32` as %1, `OpConstant %1 zero` as %2 when
    /// `with_zero`, and one lookup `%4 = OpImageSampleDrefImplicitLod %1 %5 %6 %7 [operands]`
    /// (the ids of the image and coordinates are not declared: only the rewrite reads this).
    fn tiny_module(with_zero: bool, operands: &[u32]) -> Vec<u32> {
        let mut module = vec![MAGIC, 0x0001_0300, 0, 8, 0];
        module.extend([(3 << 16) | u32::from(OP_TYPE_FLOAT), 1, 32]);
        if with_zero {
            module.extend([(4 << 16) | u32::from(OP_CONSTANT), 1, 2, 0]);
        }
        let count = 6 + operands.len() as u32;
        module.extend([
            (count << 16) | u32::from(OP_IMAGE_SAMPLE_DREF_IMPLICIT_LOD),
            1,
            4,
            5,
            6,
            7,
        ]);
        module.extend(operands);
        module
    }

    /// Every lighting and forward module samples its shadow maps at an explicit level after the
    /// rewrite, one lookup for one lookup; the other modules have none and stay as they are.
    #[test]
    fn every_shadow_lookup_of_the_shaders_becomes_explicit() {
        for row in VARIANTS {
            let module = words(row.spirv);
            let implicit = count(&module, OP_IMAGE_SAMPLE_DREF_IMPLICIT_LOD);
            let (rewritten, n) = explicit_lod_depth_compares(&module).unwrap();
            assert_eq!(n, implicit, "{}", row.name);
            assert_eq!(
                count(&rewritten, OP_IMAGE_SAMPLE_DREF_IMPLICIT_LOD),
                0,
                "{}",
                row.name
            );
            assert_eq!(
                count(&rewritten, OP_IMAGE_SAMPLE_DREF_EXPLICIT_LOD),
                implicit,
                "{}",
                row.name
            );
            // glslang's modules declare a float 0.0 already: two words per lookup, no new id.
            assert_eq!(rewritten.len(), module.len() + 2 * n, "{}", row.name);
            assert_eq!(rewritten[BOUND_WORD], module[BOUND_WORD], "{}", row.name);
            if n == 0 {
                assert_eq!(rewritten, module, "{}", row.name);
            }
        }
        let lighting = VARIANTS.iter().find(|v| v.name == "lighting.frag").unwrap();
        assert_eq!(
            count(&words(lighting.spirv), OP_IMAGE_SAMPLE_DREF_IMPLICIT_LOD),
            2,
            "lighting.frag: one lookup for the 2D array (cascades, spots), one for the cubes"
        );
    }

    /// The rewritten modules are valid SPIR-V for Vulkan 1.1 (`spirv-val`, where installed; the
    /// GPU tests also create every one under the validation layer).
    #[test]
    fn rewritten_modules_validate() {
        let dir = std::env::temp_dir().join(format!("btd-explicit-lod-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for row in VARIANTS {
            let (module, n) = explicit_lod_depth_compares(&words(row.spirv)).unwrap();
            if n == 0 {
                continue;
            }
            let path = dir.join(format!("{}.spv", row.name));
            let bytes: Vec<u8> = module.iter().flat_map(|w| w.to_le_bytes()).collect();
            std::fs::write(&path, bytes).unwrap();
            shaders_tests::validate(&path, row.name);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_lookup_gets_lod_zero_before_its_other_operands() {
        const CONST_OFFSET: u32 = 0x8;
        let module = tiny_module(true, &[CONST_OFFSET, 9]);
        let (rewritten, n) = explicit_lod_depth_compares(&module).unwrap();
        assert_eq!(n, 1);
        let lookup = &rewritten[rewritten.len() - 9..];
        assert_eq!(
            lookup,
            [
                (9 << 16) | u32::from(OP_IMAGE_SAMPLE_DREF_EXPLICIT_LOD),
                1,
                4,
                5,
                6,
                7,
                CONST_OFFSET | IMAGE_OPERANDS_LOD,
                2,
                9
            ]
        );
    }

    #[test]
    fn a_module_without_a_zero_gets_one_with_a_new_id() {
        let module = tiny_module(false, &[]);
        let (rewritten, n) = explicit_lod_depth_compares(&module).unwrap();
        assert_eq!(n, 1);
        assert_eq!(rewritten[BOUND_WORD], 9, "the bound grows by the new id");
        let expected_tail = [
            (3 << 16) | u32::from(OP_TYPE_FLOAT),
            1,
            32,
            (4 << 16) | u32::from(OP_CONSTANT),
            1,
            8,
            0,
            (8 << 16) | u32::from(OP_IMAGE_SAMPLE_DREF_EXPLICIT_LOD),
            1,
            4,
            5,
            6,
            7,
            IMAGE_OPERANDS_LOD,
            8,
        ];
        assert_eq!(&rewritten[HEADER_WORDS..], expected_tail);
    }

    #[test]
    fn bad_modules_are_refused_with_the_reason() {
        assert_eq!(
            explicit_lod_depth_compares(&[1, 2, 3]),
            Err(ExplicitLodError::NotSpirv)
        );
        let mut truncated = tiny_module(true, &[]);
        truncated.pop();
        assert!(matches!(
            explicit_lod_depth_compares(&truncated),
            Err(ExplicitLodError::Truncated { .. })
        ));
        let biased = tiny_module(true, &[IMAGE_OPERANDS_BIAS, 3]);
        let error = explicit_lod_depth_compares(&biased).unwrap_err();
        assert!(matches!(
            error,
            ExplicitLodError::ImplicitOnlyOperand { operands: 1, .. }
        ));
        assert!(error.to_string().contains("bias"), "{error}");
        let mut not_float = tiny_module(true, &[]);
        let last = not_float.len() - 5;
        not_float[last] = 3;
        assert!(matches!(
            explicit_lod_depth_compares(&not_float),
            Err(ExplicitLodError::NotFloatResult { .. })
        ));
    }
}
