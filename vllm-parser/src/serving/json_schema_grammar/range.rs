//! Integer bounds as xgrammar 0.2.8 writes them: a regex matching the
//! integers of `[start, end]` (`_generate_range_regex` in
//! `xgrammar.testing`), later turned into rules ([`super::regex`]).
//!
//! Written from the regexes xgrammar prints and checked against them. The
//! positive numbers of a range are split by digit count; a run of one digit
//! count is split at its first digit: the numbers sharing the lower bound's
//! first digit, those whose first digit lies strictly between, those sharing
//! the upper bound's first digit, each the same way on the remaining digits
//! (`12[3-9]|1[3-8]\d|19\d` for 123–199). A run where the remaining digits
//! are all free is one class (`[1-5]\d{2}` for 100–599).

/// `\d{n}` as written (`\d` for one digit, nothing for none).
fn digits(n: usize) -> String {
    match n {
        0 => String::new(),
        1 => "\\d".into(),
        n => format!("\\d{{{n}}}"),
    }
}

/// A digit or a class of them (`\d` for every digit).
fn class(lo: u8, hi: u8) -> String {
    match (lo, hi) {
        (b'0', b'9') => "\\d".into(),
        (lo, hi) if lo == hi => (lo as char).to_string(),
        (lo, hi) => format!("[{}-{}]", lo as char, hi as char),
    }
}

/// The alternatives matching the digit strings from `lo` to `hi` (of one
/// length), each after `prefix`.
fn same_length(prefix: &str, lo: &[u8], hi: &[u8], out: &mut Vec<String>) {
    let (d1, d2) = (lo[0], hi[0]);
    let rest = lo.len() - 1;
    if rest == 0 {
        out.push(format!("{prefix}{}", class(d1, d2)));
        return;
    }
    let (s1, s2) = (&lo[1..], &hi[1..]);
    if d1 == d2 {
        same_length(&format!("{prefix}{}", d1 as char), s1, s2, out);
        return;
    }
    let zeros = s1.iter().all(|&b| b == b'0');
    let nines = s2.iter().all(|&b| b == b'9');
    if zeros && nines {
        if (d1, d2) == (b'0', b'9') {
            out.push(format!("{prefix}{}", digits(lo.len())));
        } else {
            out.push(format!("{prefix}{}{}", class(d1, d2), digits(rest)));
        }
        return;
    }
    if zeros {
        out.push(format!("{prefix}{}{}", d1 as char, digits(rest)));
    } else {
        let top = vec![b'9'; rest];
        same_length(&format!("{prefix}{}", d1 as char), s1, &top, out);
    }
    if d2 - d1 > 1 {
        out.push(format!("{prefix}{}{}", class(d1 + 1, d2 - 1), digits(rest)));
    }
    if nines {
        out.push(format!("{prefix}{}{}", d2 as char, digits(rest)));
    } else {
        let bottom = vec![b'0'; rest];
        same_length(&format!("{prefix}{}", d2 as char), &bottom, s2, out);
    }
}

/// The alternatives matching `lo..=hi` (`1 <= lo <= hi`), by digit count.
fn positive(lo: u128, hi: u128) -> Vec<String> {
    let mut out = Vec::new();
    let (lo_len, hi_len) = (lo.to_string().len(), hi.to_string().len());
    for len in lo_len..=hi_len {
        let first = 10u128.pow(len as u32 - 1);
        let last = first * 10 - 1;
        let a = lo.max(first).to_string();
        let b = hi.min(last).to_string();
        same_length("", a.as_bytes(), b.as_bytes(), &mut out);
    }
    out
}

/// The numbers from `lo` up, unbounded (`1 <= lo`).
fn positive_from(lo: u128) -> Vec<String> {
    let len = lo.to_string().len();
    let mut out = positive(lo, 10u128.pow(len as u32) - 1);
    out.push(format!("[1-9]\\d{{{len},}}"));
    out
}

/// The regex of the integers in `[start, end]` (`None`: unbounded), as
/// xgrammar 0.2.8 writes it; `start <= end` and one of them is set.
pub(super) fn integer_range_regex(start: Option<i64>, end: Option<i64>) -> String {
    let group = |parts: Vec<String>| format!("({})", parts.join("|"));
    let magnitude = |v: i64| v.unsigned_abs() as u128;
    let mut parts = Vec::new();
    match (start, end) {
        (Some(start), None) if start > 0 => parts = positive_from(magnitude(start)),
        (Some(start), None) => {
            if start < 0 {
                parts.push(format!("-{}", group(positive(1, magnitude(start)))));
            }
            parts.push("0".into());
            parts.push("[1-9]\\d*".into());
        }
        (None, Some(end)) if end < 0 => {
            parts = positive_from(magnitude(end))
                .into_iter()
                .map(|p| format!("-{p}"))
                .collect();
        }
        (None, Some(end)) => {
            parts.push("-[1-9]\\d*".into());
            parts.push("0".into());
            if end > 0 {
                parts.push(group(positive(1, magnitude(end))));
            }
        }
        (Some(start), Some(end)) => {
            if start < 0 {
                let low = if end < 0 { magnitude(end) } else { 1 };
                parts.push(format!("-{}", group(positive(low, magnitude(start)))));
            }
            if start <= 0 && end >= 0 {
                parts.push("0".into());
            }
            if end > 0 {
                parts.push(group(positive(start.max(1) as u128, end as u128)));
            }
        }
        (None, None) => return "^-?\\d+$".into(),
    }
    format!("^({})$", parts.join("|"))
}

/// One end of a number range: a whole number, and whether it is excluded.
#[derive(Debug, Clone, Copy)]
pub(super) struct End {
    pub(super) value: i64,
    pub(super) exclusive: bool,
}

/// `P.x` with a non-zero fraction of at most six digits, for the whole part `P`.
fn fractions(whole: &str, out: &mut Vec<String>) {
    for zeros in 0..6 {
        let more = 5 - zeros;
        let tail = if more > 0 {
            format!("\\d{{0,{more}}}")
        } else {
            String::new()
        };
        out.push(format!("{whole}\\.{}[1-9]{tail}", "0".repeat(zeros)));
    }
}

/// The alternatives of the magnitudes from `a` to `b` (`None`: unbounded)
/// on one side of zero, each after `sign`; zero itself is not among them.
fn side(sign: &str, a: End, b: Option<End>, out: &mut Vec<String>) {
    let a_text = a.value.unsigned_abs().to_string();
    let mut parts = Vec::new();
    fractions(&a_text, &mut parts);
    if a.value != 0 && !a.exclusive {
        parts.push(format!("{a_text}\\.0{{1,6}}"));
        parts.push(a_text.clone());
    }
    let low = a.value.unsigned_abs() as u128 + 1;
    const TAIL: &str = "(\\.\\d{1,6})?";
    match b {
        None => parts.push(format!("({}){TAIL}", positive_from(low).join("|"))),
        Some(b) => {
            let high = b.value.unsigned_abs() as u128;
            if high > low {
                parts.push(format!("(({})){TAIL}", positive(low, high - 1).join("|")));
            }
            if !b.exclusive {
                parts.push(format!("{high}\\.0{{1,6}}"));
                parts.push(high.to_string());
            }
        }
    }
    out.extend(parts.into_iter().map(|p| format!("{sign}{p}")));
}

/// The regex of the numbers (six decimals at most) between `start` and
/// `end` (whole numbers; `None`: unbounded), as xgrammar 0.2.8 writes it;
/// `start < end` and one of them is set.
pub(super) fn number_range_regex(start: Option<End>, end: Option<End>) -> String {
    let zero = End {
        value: 0,
        exclusive: false,
    };
    let mut parts = Vec::new();
    let negative = start.is_none_or(|s| s.value < 0);
    if negative {
        let a = match end {
            Some(e) if e.value < 0 => e,
            _ => zero,
        };
        side("-", a, start, &mut parts);
    }
    let includes_zero = start.is_none_or(|s| s.value < 0 || (s.value == 0 && !s.exclusive))
        && end.is_none_or(|e| e.value > 0 || (e.value == 0 && !e.exclusive));
    if includes_zero {
        parts.push("0(\\.0{1,6})?".into());
        if negative {
            parts.push("-0(\\.0{1,6})".into());
        }
    }
    if end.is_none_or(|e| e.value > 0) {
        let a = match start {
            Some(s) if s.value >= 0 => s,
            _ => zero,
        };
        side("", a, end, &mut parts);
    }
    format!("^({})$", parts.join("|"))
}

#[cfg(test)]
mod tests {
    use super::integer_range_regex as r;

    #[test]
    fn ranges_are_written_as_xgrammar_writes_them() {
        for (start, end, regex) in [
            (Some(1), None, r"^([1-9]|[1-9]\d{1,})$"),
            (Some(1), Some(1000), r"^(([1-9]|[1-9]\d|[1-9]\d{2}|1000))$"),
            (Some(-5), None, r"^(-([1-5])|0|[1-9]\d*)$"),
            (None, Some(10), r"^(-[1-9]\d*|0|([1-9]|10))$"),
            (Some(3), Some(47), r"^(([3-9]|1\d|[2-3]\d|4[0-7]))$"),
            (
                Some(12),
                Some(345),
                r"^((1[2-9]|[2-8]\d|9\d|1\d{2}|2\d{2}|30\d|3[1-3]\d|34[0-5]))$",
            ),
            (
                Some(123),
                None,
                r"^(12[3-9]|1[3-8]\d|19\d|[2-8]\d{2}|9\d{2}|[1-9]\d{3,})$",
            ),
            (None, Some(-12), r"^(-1[2-9]|-[2-8]\d|-9\d|-[1-9]\d{2,})$"),
            (Some(-100), Some(-10), r"^(-([1-9]\d|100))$"),
            (Some(5), Some(5), r"^((5))$"),
            (Some(0), Some(0), r"^(0)$"),
            (Some(1000), Some(1999), r"^((1\d{3}))$"),
            (Some(101), Some(199), r"^((10[1-9]|1[1-8]\d|19\d))$"),
        ] {
            assert_eq!(r(start, end), regex, "{start:?} {end:?}");
        }
    }
}
