//! Reads NUL-separated texts on stdin; prints one line per text: its o200k and
//! cl100k token counts.
use std::io::{Read, Write};

fn main() {
    let mut input = Vec::new();
    std::io::stdin().read_to_end(&mut input).expect("stdin");
    let o200k = bpe_openai::o200k_base();
    let cl100k = bpe_openai::cl100k_base();
    let mut out = std::io::stdout().lock();
    for chunk in input.split(|b| *b == 0) {
        let text = String::from_utf8_lossy(chunk);
        writeln!(out, "{} {}", o200k.count(&text), cl100k.count(&text)).expect("stdout");
    }
}
