//! Counting characters in UTF-8 text by its bytes, for the few bytes of a token at a time:
//! every byte that is not a continuation byte (`0b10xx_xxxx`) starts a character.

/// Whether `byte` starts a character.
#[inline(always)]
pub(crate) fn is_char_start(byte: u8) -> bool {
    (byte as i8) >= -0x40
}

/// `str::chars().count()` over UTF-8 bytes.
#[inline]
pub(crate) fn count_chars(text: &[u8]) -> usize {
    text.iter().filter(|&&b| is_char_start(b)).count()
}

/// The byte offset of the end of the first `count` characters of `text` (its length when
/// it has no more than `count`).
#[inline]
pub(crate) fn char_end(text: &[u8], count: usize) -> usize {
    let mut seen = 0;
    for (i, &b) in text.iter().enumerate() {
        if is_char_start(b) {
            if seen == count {
                return i;
            }
            seen += 1;
        }
    }
    text.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_ends_agree_with_str() {
        let text = "aé€😀b";
        assert_eq!(count_chars(text.as_bytes()), text.chars().count());
        for count in 0..=5 {
            let end = text
                .char_indices()
                .nth(count)
                .map_or(text.len(), |(i, _)| i);
            assert_eq!(char_end(text.as_bytes(), count), end);
        }
    }
}
