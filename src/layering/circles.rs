//! Import circles inside a folder: the check that the files of one module folder use each
//! other one way only. For every folder, each child (a file or a sub-folder) is a node, and a
//! child that names a sibling (`super::x`, `crate::..::x`, a `pub use` of the parent that leads
//! there) is an edge; a circle is a set of children that reach each other. Test code is left
//! out, as in the layering check.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use super::{code_only, find, ident_at, module_of, rust_files, skip_space, test_only_files, without_test_items};

/// Where a path starts.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Root {
    Crate,
    /// `super::` this many times.
    Super(usize),
    SelfModule,
    /// A bare first segment (in a `use`: a child module or another crate).
    Bare,
}

/// One path, its groups expanded: `use super::{a, b::c}` gives `super::a` and `super::b::c`.
#[derive(Debug, PartialEq)]
struct UsePath {
    root: Root,
    segments: Vec<String>,
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

/// The path tail at `i` (after its root), with `prefix` before it, into `out`.
fn tail(b: &[u8], mut i: usize, prefix: &mut Vec<String>, root: Root, out: &mut Vec<UsePath>) -> usize {
    i = skip_space(b, i);
    if b.get(i) == Some(&b'{') {
        i += 1;
        loop {
            i = skip_space(b, i);
            match b.get(i) {
                None => return i,
                Some(b'}') => return i + 1,
                Some(b',') => i += 1,
                Some(_) => {
                    let before = i;
                    let mut inner = prefix.clone();
                    i = tail(b, i, &mut inner, root, out);
                    if i == before {
                        i += 1;
                    }
                }
            }
        }
    }
    if b.get(i) == Some(&b'*') {
        out.push(UsePath { root, segments: prefix.clone() });
        return i + 1;
    }
    if !b.get(i).copied().is_some_and(is_ident_start) {
        out.push(UsePath { root, segments: prefix.clone() });
        return i;
    }
    let name = ident_at(b, i).to_string();
    i += name.len();
    if name != "self" {
        prefix.push(name);
    }
    let j = skip_space(b, i);
    if b[j..].starts_with(b"::") {
        return tail(b, j + 2, prefix, root, out);
    }
    out.push(UsePath { root, segments: prefix.clone() });
    i
}

/// Every `crate::`, `super::` and `self::` path in `code`, and the paths of its `use`
/// declarations that start with a bare name.
fn paths(code: &str) -> Vec<UsePath> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let word_start = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b':');
        if !word_start {
            i += 1;
            continue;
        }
        let rest = &b[i..];
        let (root, after) = if rest.starts_with(b"crate::") {
            (Root::Crate, i + "crate::".len())
        } else if rest.starts_with(b"super::") {
            let mut ups = 0;
            let mut j = i;
            while b[j..].starts_with(b"super::") {
                ups += 1;
                j += "super::".len();
            }
            (Root::Super(ups), j)
        } else if rest.starts_with(b"self::") {
            (Root::SelfModule, i + "self::".len())
        } else if rest.starts_with(b"use ") {
            let j = skip_space(b, i + 3);
            if ["crate::", "super::", "self::", "::"].iter().any(|r| b[j..].starts_with(r.as_bytes())) {
                i = j;
                continue;
            }
            (Root::Bare, j)
        } else {
            i += 1;
            continue;
        };
        i = tail(b, after, &mut Vec::new(), root, &mut out).max(after);
    }
    out
}

/// The module path a path names, from a file of module `module` (`None` for other crates).
fn absolute(path: &UsePath, module: &[String]) -> Option<Vec<String>> {
    // A file's `super` is its parent module; a mod.rs's module is its folder, whose `super`
    // is the folder above.
    let base: Vec<String> = match path.root {
        Root::Crate => Vec::new(),
        Root::SelfModule | Root::Bare => module.to_vec(),
        Root::Super(n) => module[..module.len().checked_sub(n)?].to_vec(),
    };
    Some(base.into_iter().chain(path.segments.iter().cloned()).collect())
}

/// The source tree as modules: which exist, and what each re-exports under which name.
struct Tree {
    modules: BTreeSet<Vec<String>>,
    /// (module, name) -> the module the re-exported item lives in.
    reexports: BTreeMap<(Vec<String>, String), Vec<String>>,
}

impl Tree {
    /// The module a full path lands in: its longest prefix that is a module, or the module a
    /// `pub use` there sends its next name to.
    fn resolve(&self, full: &[String]) -> Vec<String> {
        let mut n = full.len();
        while n > 0 && !self.modules.contains(&full[..n]) {
            n -= 1;
        }
        let at = full[..n].to_vec();
        match full.get(n) {
            Some(name) => self.reexports.get(&(at.clone(), name.clone())).cloned().unwrap_or(at),
            None => at,
        }
    }
}

/// The library's files (test code aside) with their modules and code.
fn sources(src: &Path) -> Vec<(Vec<String>, String)> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let tests = test_only_files(&files);
    files
        .iter()
        .filter(|f| !tests.contains(*f))
        .map(|f| {
            let rel = f.strip_prefix(src).expect("under src");
            let code = without_test_items(&code_only(&fs::read_to_string(f).expect("readable source file")));
            (module_of(rel), code)
        })
        .collect()
}

fn tree(files: &[(Vec<String>, String)]) -> Tree {
    let modules: BTreeSet<Vec<String>> = files.iter().map(|(m, _)| m.clone()).collect();
    let mut tree = Tree { modules, reexports: BTreeMap::new() };
    for (module, code) in files {
        let b = code.as_bytes();
        let mut from = 0;
        while let Some(at) = find(b, b"use ", from) {
            from = at + 4;
            let head = code[..at].trim_end();
            if !(head.ends_with("pub") || head.ends_with(')') && head.contains("pub(")) {
                continue;
            }
            for p in paths(&code[at..code[at..].find(';').map_or(code.len(), |e| at + e + 1)]) {
                let Some(full) = absolute(&p, module) else { continue };
                let Some(name) = full.last() else { continue };
                let target = tree.resolve(&full);
                tree.reexports.insert((module.clone(), name.clone()), target);
            }
        }
    }
    tree
}

/// Every edge between two children of one folder: folder -> (from child, to child) -> first
/// place it is seen.
type Edges = BTreeMap<Vec<String>, BTreeMap<(String, String), String>>;

fn edges(files: &[(Vec<String>, String)], tree: &Tree) -> Edges {
    let mut edges = Edges::new();
    for (module, code) in files {
        for p in paths(code) {
            if p.root == Root::Bare {
                continue;
            }
            let Some(full) = absolute(&p, module) else { continue };
            let target = tree.resolve(&full);
            let common = module.iter().zip(&target).take_while(|(a, b)| a == b).count();
            // (the crate's top level is the layering check's: its one circle is a seam)
            if common > 0 && common < module.len() && common < target.len() {
                let folder = module[..common].to_vec();
                let seen = format!("{} names {}", module.join("/"), target.join("::"));
                edges
                    .entry(folder)
                    .or_default()
                    .entry((module[common].clone(), target[common].clone()))
                    .or_insert(seen);
            }
        }
    }
    edges
}

/// The circles among the children of each folder: the sets of more than one child that all
/// reach each other, as "folder: a -> b -> a" with the edges' evidence.
fn circles(edges: &Edges) -> Vec<(Vec<String>, Vec<String>)> {
    let mut found = Vec::new();
    for (folder, graph) in edges {
        let nodes: BTreeSet<&String> = graph.keys().flat_map(|(a, b)| [a, b]).collect();
        let reach = |from: &String| -> BTreeSet<String> {
            let mut seen = BTreeSet::new();
            let mut stack = vec![from.clone()];
            while let Some(n) = stack.pop() {
                for (a, b) in graph.keys() {
                    if *a == n && seen.insert(b.clone()) {
                        stack.push(b.clone());
                    }
                }
            }
            seen
        };
        let reaches: BTreeMap<&String, BTreeSet<String>> = nodes.iter().map(|&n| (n, reach(n))).collect();
        let mut done = BTreeSet::new();
        for &n in &nodes {
            if done.contains(n) || !reaches[n].contains(n) {
                continue;
            }
            let members: Vec<String> = nodes
                .iter()
                .filter(|&&m| reaches[n].contains(m) && reaches[m].contains(n))
                .map(|m| (*m).clone())
                .collect();
            done.extend(members.iter().cloned());
            found.push((folder.clone(), members));
        }
    }
    found
}

/// The circles of the tree at `src`: `folder: a, b, ...` and the edges that close them.
fn report(src: &Path) -> Vec<(String, String)> {
    let files = sources(src);
    let tree = tree(&files);
    let edges = edges(&files, &tree);
    circles(&edges)
        .into_iter()
        .map(|(folder, members)| {
            let graph = &edges[&folder];
            let evidence: Vec<&str> = graph
                .iter()
                .filter(|((a, b), _)| members.contains(a) && members.contains(b))
                .map(|(_, seen)| seen.as_str())
                .collect();
            (format!("{}: {}", folder.join("/"), members.join(", ")), evidence.join("; "))
        })
        .collect()
}

/// The circles still to be broken, each with the reason it stays for now. The check fails on
/// any other circle, and on one of these once it is gone (so that the list only shrinks).
/// Empty since issue 48: every folder's files use each other one way.
const KNOWN: &[(&str, &str)] = &[];

#[cfg(test)]
mod tests {
    use super::*;

    fn segments(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_only_import_circles_are_the_known_ones() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let found = report(&src);
        let new: Vec<String> = found
            .iter()
            .filter(|(c, _)| !KNOWN.iter().any(|(k, _)| k == c))
            .map(|(c, why)| format!("{c} ({why})"))
            .collect();
        let gone: Vec<&str> = KNOWN.iter().map(|(k, _)| *k).filter(|k| !found.iter().any(|(c, _)| c == k)).collect();
        assert!(new.is_empty(), "import circles inside folders:\n{}", new.join("\n"));
        assert!(gone.is_empty(), "circles no longer there; take them off KNOWN:\n{}", gone.join("\n"));
    }

    #[test]
    fn groups_and_roots_are_expanded() {
        let code =
            "use super::{a, b::{c, self}};\nuse crate::x::y;\nfn f() { self::z::g(); }\nuse child::w;\nuse std::ffi;";
        let got: Vec<(Root, Vec<String>)> = paths(code).into_iter().map(|p| (p.root, p.segments)).collect();
        assert_eq!(
            got,
            [
                (Root::Super(1), segments(&["a"])),
                (Root::Super(1), segments(&["b", "c"])),
                (Root::Super(1), segments(&["b"])),
                (Root::Crate, segments(&["x", "y"])),
                (Root::SelfModule, segments(&["z", "g"])),
                (Root::Bare, segments(&["child", "w"])),
                (Root::Bare, segments(&["std", "ffi"])),
            ]
        );
    }

    #[test]
    fn a_circle_through_a_reexport_is_found() {
        let dir = std::env::temp_dir().join(format!("ggml-rs-circles-{}", std::process::id()));
        let src = dir.join("src");
        fs::create_dir_all(src.join("dev")).expect("temp dir");
        fs::write(src.join("lib.rs"), "pub mod dev;\npub mod other;\n").expect("write");
        fs::write(src.join("other.rs"), "use crate::dev::a::f;\n").expect("write");
        fs::write(src.join("dev/mod.rs"), "pub mod a;\npub mod b;\npub mod c;\npub use b::g;\n").expect("write");
        fs::write(src.join("dev/a.rs"), "use super::g;\npub fn f() {}\n").expect("write");
        fs::write(src.join("dev/b.rs"), "pub fn g() { crate::dev::a::f(); }\n").expect("write");
        fs::write(src.join("dev/c.rs"), "use super::a;\n#[cfg(test)]\nmod tests { use super::super::b; }\n")
            .expect("write");
        let found = report(&src);
        fs::remove_dir_all(&dir).ok();
        assert_eq!(found, [("dev: a, b".to_string(), "dev/a names dev::b; dev/b names dev::a".to_string())]);
    }
}
