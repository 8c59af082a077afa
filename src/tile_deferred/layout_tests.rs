//! The tile path's files import each other in one direction only: the stages are leaves the
//! recipe in `pass.rs` calls, so a new stage that imports its caller back shows up here.

use std::collections::{BTreeMap, BTreeSet};

/// The sibling modules each file of `src/tile_deferred` (or folder with a `mod.rs`) names
/// through `super::` or `crate::tile_deferred::` (the parent `mod.rs` itself is not a sibling).
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/tile_deferred");
    let modules: BTreeMap<String, String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name()?.to_str()?.to_owned();
            if path.join("mod.rs").exists() {
                return Some((name, format!("{}/mod.rs", path.display())));
            }
            let module = name.strip_suffix(".rs")?.to_owned();
            (module != "mod").then(|| (module, path.display().to_string()))
        })
        .collect();
    modules
        .iter()
        .map(|(module, path)| {
            let source = std::fs::read_to_string(path).unwrap();
            // Only the file's own code: its test module may use anything.
            let code = source.split("#[cfg(test)]").next().unwrap();
            let named = paths_after(code, "super::")
                .into_iter()
                .chain(paths_after(code, "crate::tile_deferred::"))
                .filter(|name| modules.contains_key(name) && name != module)
                .collect();
            (module.clone(), named)
        })
        .collect()
}

/// The first path segment after every `prefix`, expanding `prefix{a, b::c}` groups.
fn paths_after(code: &str, prefix: &str) -> Vec<String> {
    let identifier = |text: &str| -> String {
        text.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut names = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        let rest = &code[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && !c.is_whitespace() => {
                        names.push(identifier(&group[i..]));
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            names.push(identifier(rest));
        }
    }
    names
}

#[test]
fn no_file_of_the_tile_path_imports_its_importers() {
    let graph = imports();
    // The recipe reaches every stage; a sanity check that the parse sees imports at all.
    assert!(graph["pass"].contains("view") && graph["pass"].contains("record"));
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
        for next in &graph[module] {
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
fn the_import_parse_sees_groups_and_paths() {
    let code = "use super::{a, b::{C, D}, c::E};\nlet x = super::d::f();";
    assert_eq!(paths_after(code, "super::"), ["a", "b", "c", "d"]);
}
