//! Counting tokens with a real tokenizer: OpenAI's `o200k_base` BPE
//! (tiktoken-rs, its ranks bundled, nothing fetched). Other vendors'
//! tokenizers differ by some percent; this is an estimate that splits
//! and routes, not a bill.

use std::sync::OnceLock;

/// The tokens in `text`.
pub fn count(text: &str) -> u64 {
    static BPE: OnceLock<Option<tiktoken_rs::CoreBPE>> = OnceLock::new();
    match BPE.get_or_init(|| tiktoken_rs::o200k_base().ok()) {
        Some(bpe) => bpe.encode_ordinary(text).len() as u64,
        // The ranks are compiled in: this cannot fail short of a broken build.
        None => text.split_whitespace().count() as u64,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tokens_are_counted_by_the_bpe_not_by_length() {
        assert_eq!(super::count("Hello, world!"), 4);
        // A long word of one letter is few tokens; chars / 4 would say 50.
        assert!(super::count(&"a".repeat(200)) < 50);
    }
}
