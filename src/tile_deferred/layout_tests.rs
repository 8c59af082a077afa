//! The tile path's files import each other in one direction only. Its folders are layers (the
//! `LAYERS` table): a file may import files of its own layer (without a circle) and of the
//! layers below it, never one above. So a new stage that imports its caller back, or a GPU
//! cache that reaches up into the ECS side, shows up here.

use std::collections::{BTreeMap, BTreeSet};

/// Each top-level module or folder of `src/tile_deferred`, bottom first, with its layer.
const LAYERS: &[(&str, usize)] = &[
    ("camera", 0),
    ("error", 0),
    ("plan", 1),
    ("report", 1),
    ("gpu", 2),
    ("lighting", 3),
    ("scene", 4),
    ("frame", 5),
    ("overlays", 6),
    ("coverage", 7),
    // The plugin wiring (`mod.rs`) uses everything.
    ("mod", 8),
];

/// Folders that may not use some lower layers: what Bevy draws after the tile pass knows the
/// camera, the plan's names and the reports, not how the tile pass was recorded.
const MAY_NOT_USE: &[(&str, &str)] = &[
    ("overlays", "frame"),
    ("overlays", "scene"),
    ("overlays", "lighting"),
];

/// Every `.rs` file under `src/tile_deferred` as its module path (`gpu::backend`; `mod` for the
/// folder's own `mod.rs`, `gpu` for `gpu/mod.rs`), with its source.
fn files() -> BTreeMap<String, String> {
    fn walk(dir: &std::path::Path, prefix: &[String], out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            if path.is_dir() {
                let mut inner = prefix.to_vec();
                inner.push(name);
                walk(&path, &inner, out);
            } else if let Some(stem) = name.strip_suffix(".rs") {
                let mut module = prefix.to_vec();
                if stem != "mod" {
                    module.push(stem.to_owned());
                }
                let module = if module.is_empty() {
                    "mod".to_owned()
                } else {
                    module.join("::")
                };
                out.insert(module, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/tile_deferred");
    walk(std::path::Path::new(dir), &[], &mut out);
    out.remove("layout_tests");
    out
}

/// The file's own code: without its test module (which may use anything) and without
/// comments (a doc link is not an import).
fn code_of(source: &str) -> String {
    let source = match source.find("#[cfg(test)]\nmod tests") {
        Some(at) => &source[..at],
        None => source,
    };
    source
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The modules of the tile path each file names through `super::` or `crate::tile_deferred::`
/// (itself and its own folder's `mod.rs` aside), as module paths of [`files`].
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let files = files();
    // The longest module path of the tile path that `path` starts with.
    // (A path that starts with no module names an item of `mod.rs`, or one it re-exports.)
    let resolve = |path: &[String]| -> String {
        (1..=path.len())
            .rev()
            .map(|n| path[..n].join("::"))
            .find(|module| files.contains_key(module))
            .unwrap_or_else(|| "mod".to_owned())
    };
    files
        .iter()
        .map(|(module, source)| {
            let code = code_of(source);
            // `super::` of a file is its folder; of a folder's `mod.rs`, the folder above.
            let mut folder: Vec<String> = if module == "mod" {
                Vec::new()
            } else {
                module.split("::").map(str::to_owned).collect()
            };
            folder.pop();
            let in_folder = |path: Vec<String>| folder.iter().cloned().chain(path).collect();
            // `super::` of the top `mod.rs` is the crate root, outside the tile path.
            let relative = if module == "mod" {
                Vec::new()
            } else {
                paths_after(&code, "super::")
            };
            let named = relative
                .into_iter()
                .map(in_folder)
                .chain(paths_after(&code, "crate::tile_deferred::"))
                .map(|path: Vec<String>| resolve(&path))
                // A file's own folder (its `mod.rs`) declares it: not an import.
                .filter(|used| used != module && !module.starts_with(&format!("{used}::")))
                .collect();
            (module.clone(), named)
        })
        .collect()
}

/// The path after every `prefix`, expanding `prefix{a, b::{c, d}}` groups into one path each.
fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    fn tree(text: &str, base: &[String], out: &mut Vec<Vec<String>>) {
        let mut path = base.to_vec();
        let mut rest = text.trim_start();
        let mut named = false;
        loop {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if name.is_empty() {
                break;
            }
            rest = &rest[name.len()..];
            named = true;
            if name != "self" {
                path.push(name);
            }
            match rest.strip_prefix("::") {
                Some(more) => rest = more,
                None => break,
            }
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut start = 0;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        tree(&group[start..i], &path, out);
                        return;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        tree(&group[start..i], &path, out);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
        } else if named {
            out.push(path);
        }
    }
    let mut paths = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        // `super::super::` is the folder above: not used by the tile path's own code.
        if code[..at].ends_with("::") {
            continue;
        }
        tree(&code[at + prefix.len()..], &[], &mut paths);
    }
    paths
}

fn layer_of(module: &str) -> usize {
    let top = module.split("::").next().unwrap();
    LAYERS
        .iter()
        .find(|(name, _)| *name == top)
        .unwrap_or_else(|| panic!("{module} is in no layer of LAYERS"))
        .1
}

#[test]
fn no_file_of_the_tile_path_imports_from_a_layer_above_its_own() {
    let graph = imports();
    // A sanity check that the parse sees imports at all.
    assert!(graph["frame::pass"].contains("frame::view"), "{graph:?}");
    assert!(graph["frame::pass"].contains("gpu::record"), "{graph:?}");
    let mut upward = Vec::new();
    for (user, used) in &graph {
        for used in used {
            let top = |m: &str| m.split("::").next().unwrap().to_owned();
            if layer_of(used) > layer_of(user)
                || MAY_NOT_USE.contains(&(top(user).as_str(), top(used).as_str()))
            {
                upward.push(format!("{user} -> {used}"));
            }
        }
    }
    assert!(upward.is_empty(), "imports against the layers: {upward:#?}");
}

#[test]
fn no_file_of_the_tile_path_imports_its_importers() {
    let graph = imports();
    // Depth-first search for a back edge.
    fn visit(
        module: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) {
        if done.contains(module) {
            return;
        }
        if let Some(start) = path.iter().position(|m| m == module) {
            panic!("import circle: {} -> {module}", path[start..].join(" -> "));
        }
        path.push(module.to_owned());
        for next in graph.get(module).into_iter().flatten() {
            visit(next, graph, path, done);
        }
        path.pop();
        done.insert(module.to_owned());
    }
    let mut done = BTreeSet::new();
    for module in graph.keys() {
        visit(module, &graph, &mut Vec::new(), &mut done);
    }
}

#[test]
fn every_file_of_the_tile_path_is_in_a_layer() {
    for module in files().keys() {
        layer_of(module);
    }
}

#[test]
fn the_import_parse_sees_groups_paths_and_skips_comments() {
    let code = "use super::{a, b::{C, self}, c::E};\nlet x = super::d::f();";
    let paths: Vec<String> = paths_after(code, "super::")
        .iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(paths, ["a", "b::C", "b", "c::E", "d::f"]);
    let code = code_of("use x;\n/// [`Y`](super::y::Y)\n#[cfg(test)]\nmod tests { use super::z; }");
    assert!(paths_after(&code, "super::").is_empty(), "{code}");
}
