//! The check that keeps the layers of `lib.rs` one-way: it reads the picture at the top of
//! `src/lib.rs`, finds every `crate::` and `super::` path in the library's code (test code
//! aside) and fails, naming file and line, on each that reaches a module the picture does not
//! put below the file's own.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

mod circles;

/// The picture: each top-level module's row (0 at the bottom), and the sanctioned seams.
#[derive(Debug, Default)]
struct Picture {
    rows: BTreeMap<String, usize>,
    /// (file relative to `src/`, module it may reach).
    seams: BTreeSet<(String, String)>,
}

/// Reads the picture from `lib.rs`'s doc: the rows of the `text` block (module names left of
/// `│`, top row first) and the lines `seam `FILE` -> `MODULE``.
fn picture(lib: &str) -> Picture {
    let doc: Vec<&str> = lib.lines().filter_map(|l| l.strip_prefix("//!")).map(str::trim).collect();
    let start = doc.iter().position(|l| *l == "```text").expect("lib.rs has a ```text picture");
    let end = start + 1 + doc[start + 1..].iter().position(|l| *l == "```").expect("the picture is closed");
    let rows: Vec<Vec<String>> = doc[start + 1..end]
        .iter()
        .map(|l| l.split('│').next().unwrap_or("").split_whitespace().map(String::from).collect())
        .collect();
    let mut picture = Picture::default();
    for (i, row) in rows.iter().enumerate() {
        for module in row {
            let previous = picture.rows.insert(module.clone(), rows.len() - 1 - i);
            assert!(previous.is_none(), "`{module}` is drawn twice in lib.rs's picture");
        }
    }
    for line in &doc {
        if let Some(rest) = line.strip_prefix("- seam ") {
            let names: Vec<&str> = rest.split('`').skip(1).step_by(2).take(2).collect();
            assert!(names.len() == 2, "a seam names a file and a module: {line}");
            picture.seams.insert((names[0].to_string(), names[1].to_string()));
        }
    }
    picture
}

/// One use of another top-level module.
#[derive(Debug, PartialEq)]
struct Edge {
    line: usize,
    target: String,
}

/// `text` with comments, string and character literals blanked out (newlines kept, so line
/// numbers stay), leaving only code to scan.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, c: u8| out.push(if c == b'\n' { b'\n' } else { b' ' });
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                blank(&mut out, b[i]);
                i += 1;
            }
        } else if rest.starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw_string_start(rest) {
            let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
            let open = hashes + 2;
            out.extend(std::iter::repeat_n(b' ', open));
            i += open;
            while i < b.len() && !b[i..].starts_with(&close) {
                blank(&mut out, b[i]);
                i += 1;
            }
            out.extend(std::iter::repeat_n(b' ', close.len().min(b.len() - i)));
            i += close.len();
        } else if b[i] == b'"' {
            out.push(b' ');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                let n = if b[i] == b'\\' { 2 } else { 1 };
                for &c in &b[i..(i + n).min(b.len())] {
                    blank(&mut out, c);
                }
                i += n;
            }
            out.push(b' ');
            i += 1;
        } else if b[i] == b'\''
            && let Some(n) = char_literal_len(&text[i..])
        {
            out.extend(std::iter::repeat_n(b' ', n));
            i += n;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out.truncate(b.len());
    String::from_utf8_lossy(&out).into_owned()
}

/// The number of `#`s of a raw string literal starting here (`r"`, `r#"`, `br"`, ...).
fn raw_string_start(rest: &[u8]) -> Option<usize> {
    let rest = rest.strip_prefix(b"b").unwrap_or(rest).strip_prefix(b"r")?;
    let hashes = rest.iter().take_while(|&&c| c == b'#').count();
    (rest.get(hashes) == Some(&b'"')).then_some(hashes)
}

/// The length in bytes of a character literal starting here (`'x'`, `'\n'`, `'\u{7f}'`),
/// or `None` for a lifetime or label.
fn char_literal_len(rest: &str) -> Option<usize> {
    match rest[1..].chars().next()? {
        '\\' => rest.get(3..)?.find('\'').map(|end| end + 4),
        c => rest[1 + c.len_utf8()..].starts_with('\'').then_some(c.len_utf8() + 2),
    }
}

/// `code` with every `#[cfg(test)]` item blanked out (newlines kept).
fn without_test_items(code: &str) -> String {
    let mut b = code.as_bytes().to_vec();
    let mut from = 0;
    while let Some(at) = find(&b, b"#[cfg(test)]", from) {
        let mut i = at + b"#[cfg(test)]".len();
        // The item ends at the `;` or the brace that closes its body, whichever comes first.
        let mut depth = 0usize;
        while i < b.len() {
            match b[i] {
                b'[' if depth == 0 && b[i - 1] == b'#' => {
                    // Another attribute on the same item.
                    i = b[i..].iter().position(|&c| c == b']').map_or(b.len(), |p| i + p);
                }
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        break;
                    }
                }
                b';' if depth == 0 => break,
                _ => {}
            }
            i += 1;
        }
        for c in &mut b[at..(i + 1).min(code.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
        from = i;
    }
    String::from_utf8_lossy(&b).into_owned()
}

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    haystack.get(from..)?.windows(needle.len()).position(|w| w == needle).map(|p| p + from)
}

fn ident_at(b: &[u8], i: usize) -> &str {
    let len = b[i..].iter().take_while(|c| c.is_ascii_alphanumeric() || **c == b'_').count();
    std::str::from_utf8(&b[i..i + len]).unwrap_or("")
}

fn skip_space(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// The top-level modules named by the paths in `code`, a file of module `module` (its path
/// from the crate root: `["backend", "meta", "buffer"]`).
fn edges(code: &str, module: &[String]) -> Vec<Edge> {
    let b = code.as_bytes();
    let line_of = |i: usize| 1 + b[..i].iter().filter(|&&c| c == b'\n').count();
    let mut found = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let word_start = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b'$');
        let (at_root, after) = if word_start && b[i..].starts_with(b"crate::") {
            (true, i + "crate::".len())
        } else if word_start && b[i..].starts_with(b"super::") {
            let mut ups = 0;
            let mut j = i;
            while b[j..].starts_with(b"super::") {
                ups += 1;
                j += "super::".len();
            }
            // `super` from a file's module climbs one module per step; reaching the crate root
            // means the next name is a top-level module.
            (ups >= module.len(), j)
        } else {
            i += 1;
            continue;
        };
        if at_root {
            let j = skip_space(b, after);
            if b.get(j) == Some(&b'{') {
                // A group: the names at its first level are top-level modules.
                let mut depth = 0;
                let mut k = j;
                let mut expect_name = true;
                while k < b.len() {
                    match b[k] {
                        b'{' => {
                            depth += 1;
                            expect_name = depth == 1;
                        }
                        b'}' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        b',' if depth == 1 => expect_name = true,
                        c if expect_name && depth == 1 && (c.is_ascii_alphabetic() || c == b'_') => {
                            found.push(Edge { line: line_of(k), target: ident_at(b, k).to_string() });
                            expect_name = false;
                        }
                        _ => {}
                    }
                    k += 1;
                }
            } else {
                let name = ident_at(b, j);
                if !name.is_empty() && name != "self" {
                    found.push(Edge { line: line_of(i), target: name.to_string() });
                }
            }
        }
        i = after;
    }
    found.retain(|e| e.target != "self" && Some(&e.target) != module.first());
    found
}

/// The module path of a file under `src/` (`backend/meta/mod.rs` -> `["backend", "meta"]`).
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap_or_default();
    if last != "mod.rs" && last != "lib.rs" {
        parts.push(last.trim_end_matches(".rs").to_string());
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("readable source tree").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Files that are test code as a whole: modules declared under `#[cfg(test)]` (`mod tests;`)
/// and everything beneath them.
fn test_only_files(files: &[PathBuf]) -> BTreeSet<PathBuf> {
    let mut test_dirs = BTreeSet::new();
    for file in files {
        let text = code_only(&fs::read_to_string(file).expect("readable source file"));
        let dir = match file.file_name().and_then(|n| n.to_str()) {
            Some("mod.rs" | "lib.rs") => file.parent().map(Path::to_path_buf),
            _ => Some(file.with_extension("")),
        };
        let Some(dir) = dir else { continue };
        let mut from = 0;
        while let Some(at) = find(text.as_bytes(), b"#[cfg(test)]", from) {
            from = at + 1;
            let rest = &text[at + "#[cfg(test)]".len()..];
            let decl = rest.trim_start().trim_start_matches("pub(crate) ").trim_start_matches("pub ");
            if let Some(name) = decl.strip_prefix("mod ").and_then(|d| d.split(';').next())
                && !name.contains('{')
            {
                test_dirs.insert(dir.join(name.trim()));
            }
        }
    }
    files.iter().filter(|f| test_dirs.iter().any(|d| f.with_extension("") == *d || f.starts_with(d))).cloned().collect()
}

/// Every edge of the library's code that the picture does not allow, as `file:line` lines.
fn violations(src: &Path) -> Vec<String> {
    let lib = fs::read_to_string(src.join("lib.rs")).expect("src/lib.rs");
    let picture = picture(&lib);
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let tests = test_only_files(&files);

    // `#[macro_export]` macros are named from the crate root but belong to their file's module.
    let mut macros = BTreeMap::new();
    for file in &files {
        let text = code_only(&fs::read_to_string(file).expect("readable source file"));
        let rel = file.strip_prefix(src).expect("under src");
        for (at, _) in text.match_indices("#[macro_export]") {
            if let Some(name) = text[at..].split("macro_rules!").nth(1).map(|r| ident_at(r.trim_start().as_bytes(), 0))
            {
                macros.insert(name.to_string(), module_of(rel).first().cloned().unwrap_or_default());
            }
        }
    }

    let mut bad = Vec::new();
    let declared: BTreeSet<String> = lib
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod ").map(|m| m.trim_end_matches(';').to_string()))
        .collect();
    let drawn: BTreeSet<String> = picture.rows.keys().cloned().collect();
    for m in declared.symmetric_difference(&drawn) {
        bad.push(format!("src/lib.rs: module `{m}` is declared or drawn, not both"));
    }

    for file in files.iter().filter(|f| !tests.contains(*f)) {
        let rel = file.strip_prefix(src).expect("under src");
        let module = module_of(rel);
        let Some(own) = module.first() else { continue };
        let Some(&own_row) = picture.rows.get(own) else { continue };
        let code = without_test_items(&code_only(&fs::read_to_string(file).expect("readable source file")));
        let rel_name = rel.to_string_lossy().into_owned();
        for edge in edges(&code, &module) {
            let target = macros.get(&edge.target).unwrap_or(&edge.target);
            if target == own {
                continue;
            }
            let allowed = match picture.rows.get(target) {
                Some(&row) => row < own_row || picture.seams.contains(&(rel_name.clone(), target.clone())),
                None => false,
            };
            if !allowed {
                let why = match picture.rows.get(target) {
                    Some(&row) if row == own_row => "a neighbour on its own row",
                    Some(_) => "a row above it",
                    None => "a module the picture does not draw",
                };
                bad.push(format!("src/{rel_name}:{}: `{own}` uses `{target}`, {why}", edge.line));
            }
        }
    }
    bad
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|p| p.to_string()).collect()
    }

    fn targets(code: &str, module: &[&str]) -> Vec<String> {
        edges(&without_test_items(&code_only(code)), &path(module)).into_iter().map(|e| e.target).collect()
    }

    #[test]
    fn the_library_keeps_to_its_layers() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let bad = violations(&src);
        assert!(bad.is_empty(), "edges against the layers of src/lib.rs:\n{}", bad.join("\n"));
    }

    #[test]
    fn the_picture_is_read_bottom_up() {
        let lib = "//! ```text\n//! top a │ x\n//! low   │ y\n//! ```\n//! - seam `low/x.rs` -> `top`: why\n";
        let p = picture(lib);
        assert_eq!(p.rows.get("low"), Some(&0));
        assert_eq!((p.rows.get("top"), p.rows.get("a")), (Some(&1), Some(&1)));
        assert!(p.seams.contains(&("low/x.rs".to_string(), "top".to_string())));
    }

    #[test]
    fn paths_name_their_top_module() {
        let code = "use crate::cpu::kernels;\nuse crate::{backend::buffer, quants::{self, q4}};\nfn f() { crate::ggml_abort!(\"crate::ffi\"); }";
        assert_eq!(targets(code, &["core", "x"]), ["cpu", "backend", "quants", "ggml_abort"]);
        // `super` reaches another top-level module only by climbing past the root.
        assert_eq!(targets("use super::super::cpu::x;\nuse super::y;", &["core", "graph"]), ["cpu"]);
        assert!(targets("use super::y;", &["core", "graph", "z"]).is_empty());
    }

    #[test]
    fn test_code_and_comments_are_not_edges() {
        let code = "// crate::cpu\n/* crate::ffi */\n#[cfg(test)]\nmod tests {\n use crate::cpu::x;\n fn f() { let s = '{'; }\n}\nuse crate::quants::a;\n#[cfg(test)]\nuse crate::ffi::b;\nconst S: &str = r#\"crate::opt\"#;\nfn g<'a>(x: &'a u8) {}";
        assert_eq!(targets(code, &["core"]), ["quants"]);
    }

    #[test]
    fn a_core_file_naming_a_device_is_refused() {
        let dir = std::env::temp_dir().join(format!("ggml-rs-layering-{}", std::process::id()));
        let src = dir.join("src");
        fs::create_dir_all(src.join("core")).expect("temp dir");
        let lib = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).expect("lib.rs");
        let lib: String = lib.lines().filter(|l| !l.starts_with("pub mod ")).map(|l| format!("{l}\n")).collect();
        let drawn = picture(&lib).rows.into_keys().map(|m| format!("pub mod {m};\n")).collect::<String>();
        fs::write(src.join("lib.rs"), lib + &drawn).expect("write lib.rs");
        fs::create_dir_all(src.join("quants")).expect("temp dir");
        fs::write(src.join("quants/q4.rs"), "use crate::core::types::Type;\n").expect("write");
        fs::write(src.join("core/mod.rs"), "pub mod op;\n").expect("write");
        fs::write(src.join("core/op.rs"), "use crate::core::tensor;\nuse crate::cpu::kernels;\n").expect("write");
        let bad = violations(&src);
        fs::remove_dir_all(&dir).ok();
        assert_eq!(bad, ["src/core/op.rs:2: `core` uses `cpu`, a row above it"]);
    }
}
