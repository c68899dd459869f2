//! The store seam holds: the feature modules that work on the summary graph
//! (compaction, doctor, dagops), assembly, rewrite, large files, transcripts,
//! turns and recall run no SQL of their own — every statement they need
//! is a named operation under `src/store/`. Their `tests.rs` files may still write
//! raw rows (to damage a database on purpose).

use std::path::Path;

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

fn offenders(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".rs") || name == "tests.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            if SQL_CALLS.iter().any(|c| line.contains(c)) {
                out.push(format!("{}:{}: {}", path.display(), i + 1, line.trim()));
            }
        }
    }
    out
}

#[test]
fn features_run_no_sql_of_their_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found: Vec<String> = [
        "compaction",
        "doctor",
        "dagops",
        "assembler",
        "rewrite",
        "largefiles",
        "transcript",
        "turn",
        "retrieval",
        "retrieval/grep",
    ]
    .iter()
    .flat_map(|m| offenders(&src.join(m)))
    .collect();
    assert!(
        found.is_empty(),
        "SQL outside src/store/:\n{}",
        found.join("\n")
    );
}
