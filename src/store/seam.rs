//! The store seam holds: no library module outside `src/store/` runs SQL of its
//! own — every statement it needs is a named operation of the store (the seam a
//! second backend would implement). Test code may still write raw rows (to damage
//! a database on purpose): files named `tests.rs` or `*_tests.rs`, files under a
//! `tests/` folder, and an inline `#[cfg(test)] mod tests` block are not scanned.

use std::path::{Path, PathBuf};

/// Calls that run SQL directly on a rusqlite connection or open a transaction.
const SQL_CALLS: [&str; 8] = [
    ".prepare(",
    ".prepare_cached(",
    ".execute(",
    ".execute_batch(",
    ".query_row(",
    ".query_map(",
    "transaction_with_behavior(",
    "unchecked_transaction(",
];

fn is_test_file(path: &Path) -> bool {
    let name = path.file_name().unwrap().to_string_lossy();
    name == "tests.rs" || name.ends_with("_tests.rs")
}

fn library_files(dir: &Path, src: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap().path();
        let rel = path
            .strip_prefix(src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if rel == "store" {
            continue;
        }
        if path.is_dir() {
            if path.file_name().unwrap() != "tests" {
                library_files(&path, src, out);
            }
        } else if rel.ends_with(".rs") && !is_test_file(&path) {
            out.push(path);
        }
    }
}

/// The SQL calls of one file, up to its inline test module.
fn offenders(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let next = lines.get(i + 1).map_or("", |l| l.trim());
        if line.trim() == "#[cfg(test)]" && next.starts_with("mod tests {") {
            break;
        }
        if SQL_CALLS.iter().any(|c| line.contains(c)) {
            out.push(format!("{}:{}: {}", path.display(), i + 1, line.trim()));
        }
    }
    out
}

#[test]
fn no_library_module_outside_the_store_runs_sql_of_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    library_files(&src, &src, &mut files);
    // The scan reaches every layer, not just the top-level files.
    for layer in [
        "engine/mod.rs",
        "cli/db.rs",
        "doctor/mod.rs",
        "binding/mod.rs",
    ] {
        assert!(files.contains(&src.join(layer)), "{layer} not scanned");
    }
    let found: Vec<String> = files.iter().flat_map(|f| offenders(f)).collect();
    assert!(
        found.is_empty(),
        "SQL outside src/store/:\n{}",
        found.join("\n")
    );
}
