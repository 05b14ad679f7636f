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
//!
//! Number bounds likewise (`_generate_float_regex`): each bound is written
//! with at most six decimals (whole numbers within `i64` as themselves) and,
//! when that rounding moved it outside the range, stepped one `10^-6` back
//! inside (and then included). Each side of zero is the magnitudes between
//! two such decimals: the fractions above the lower one after its whole
//! part, the whole numbers strictly between (the integer regex, then any
//! fraction), the fractions below the upper one after its whole part. A
//! fraction above `s` agrees with `s` up to a larger digit, or extends `s`
//! with zeros and a non-zero digit; one below agrees up to a smaller digit,
//! or is a prefix of `s` with zeros; both of at most six digits.

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

/// One end of a number range: a finite number, and whether it is excluded.
#[derive(Debug, Clone, Copy)]
pub(super) struct End {
    pub(super) value: f64,
    pub(super) exclusive: bool,
}

/// The fraction digits xgrammar keeps (its `precision`).
const PRECISION: usize = 6;

/// `0{0,n}` (nothing for none).
fn optional_zeros(n: usize) -> String {
    match n {
        0 => String::new(),
        n => format!("0{{0,{n}}}"),
    }
}

/// `0{1,n}`.
fn some_zeros(n: usize) -> String {
    format!("0{{1,{n}}}")
}

/// `\d{0,n}` (nothing for none).
fn free_digits(n: usize) -> String {
    match n {
        0 => String::new(),
        n => format!("\\d{{0,{n}}}"),
    }
}

/// A non-negative decimal as xgrammar writes a bound: a whole number an
/// `i64` holds as itself, else fixed with six decimals, trailing zeros (and
/// a bare point) dropped.
fn format_float(value: f64) -> String {
    if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&value)
        && value == (value as i64) as f64
    {
        return (value as i64).to_string();
    }
    let text = format!("{value:.PRECISION$}");
    match text.split_once('.') {
        Some((whole, fraction)) => match fraction.trim_end_matches('0') {
            "" => whole.to_owned(),
            fraction => format!("{whole}.{fraction}"),
        },
        None => text,
    }
}

/// The whole and fraction digits of a decimal written by [`format_float`].
fn split(decimal: &str) -> (&str, &str) {
    decimal.split_once('.').unwrap_or((decimal, ""))
}

/// The decimal one step of `10^-6` above (`up`) or below `decimal`.
fn step(decimal: &str, up: bool) -> String {
    let (whole, fraction) = split(decimal);
    let mut digits: Vec<u8> = whole.bytes().chain(fraction.bytes()).collect();
    digits.resize(whole.len() + PRECISION.max(fraction.len()), b'0');
    let (from, to) = if up { (b'9', b'0') } else { (b'0', b'9') };
    let mut at = digits.len();
    while at > 0 && digits[at - 1] == from {
        digits[at - 1] = to;
        at -= 1;
    }
    match at {
        0 if up => digits.insert(0, b'1'),
        0 => digits.fill(b'0'),
        at if up => digits[at - 1] += 1,
        at => digits[at - 1] -= 1,
    }
    while digits.len() <= PRECISION {
        digits.insert(0, b'0');
    }
    let (whole, fraction) = digits.split_at(digits.len() - PRECISION);
    let whole = String::from_utf8_lossy(whole);
    let whole = match whole.trim_start_matches('0') {
        "" => "0",
        w => w,
    };
    match String::from_utf8_lossy(fraction).trim_end_matches('0') {
        "" => whole.to_owned(),
        fraction => format!("{whole}.{fraction}"),
    }
}

/// A non-negative bound on xgrammar's grid of six decimals, moved inwards
/// when rounding took it outside the range (then no longer excluded).
fn on_grid(value: f64, lower: bool, exclusive: bool) -> (String, bool) {
    let text = format_float(value);
    let rounded = text.parse::<f64>().unwrap_or(value);
    if rounded == value {
        return (text, exclusive);
    }
    if lower && rounded < value {
        (step(&text, true), false)
    } else if !lower && rounded > value {
        (step(&text, false), false)
    } else {
        (text, false)
    }
}

/// Fraction patterns after a point, and whether no fraction also fits.
#[derive(Default)]
struct Fractions {
    parts: Vec<String>,
    empty: bool,
}

/// The fractions of 1 to `max` digits above `s` (or equal, unless `strict`).
fn fractions_above(s: &str, strict: bool, max: usize) -> Fractions {
    let mut out = Fractions::default();
    let n = s.len();
    for (i, d) in s.bytes().enumerate() {
        if d < b'9' {
            let rest = free_digits(max.saturating_sub(i + 1));
            out.parts
                .push(format!("{}{}{rest}", &s[..i], class(d + 1, b'9')));
        }
    }
    for zeros in 0..max.saturating_sub(n) {
        let rest = free_digits(max - n - zeros - 1);
        out.parts
            .push(format!("{s}{}[1-9]{rest}", "0".repeat(zeros)));
    }
    if !strict {
        if n > 0 {
            out.parts
                .push(format!("{s}{}", optional_zeros(max.saturating_sub(n))));
        } else {
            out.empty = true;
            if max >= 1 {
                out.parts.push(some_zeros(max));
            }
        }
    }
    out
}

/// The fractions of 1 to `max` digits below `s` (or equal, unless `strict`).
fn fractions_below(s: &str, strict: bool, max: usize) -> Fractions {
    let mut out = Fractions::default();
    let n = s.len();
    for (i, d) in s.bytes().enumerate() {
        if d > b'0' {
            let rest = free_digits(max.saturating_sub(i + 1));
            out.parts
                .push(format!("{}{}{rest}", &s[..i], class(b'0', d - 1)));
        }
    }
    for i in 0..n {
        if i == 0 {
            if max >= 1 {
                out.parts.push(some_zeros(max));
            }
        } else {
            out.parts.push(format!(
                "{}{}",
                &s[..i],
                optional_zeros(max.saturating_sub(i))
            ));
        }
    }
    if !strict {
        if n > 0 {
            out.parts
                .push(format!("{s}{}", optional_zeros(max.saturating_sub(n))));
        } else if max >= 1 {
            out.parts.push(some_zeros(max));
        }
    }
    out.empty = n > 0 || !strict;
    out
}

/// The fractions between `a` and `b` (`0.a < 0.b`, `b` not empty).
fn fractions_between(a: &str, strict_a: bool, b: &str, strict_b: bool, max: usize) -> Fractions {
    let mut out = Fractions::default();
    let (a_bytes, b_bytes) = (a.as_bytes(), b.as_bytes());
    let digit_a = |i: usize| a_bytes.get(i).copied().unwrap_or(b'0');
    let mut common = 0;
    while common < b.len() && digit_a(common) == b_bytes[common] {
        common += 1;
    }
    let Some(&high) = b_bytes.get(common) else {
        return out;
    };
    let prefix = &b[..common];
    let low = digit_a(common);
    let max_rest = max.saturating_sub(common + 1);
    if high >= low + 2 {
        out.parts.push(format!(
            "{prefix}{}{}",
            class(low + 1, high - 1),
            free_digits(max_rest)
        ));
    }
    let extend = |head: String, set: Fractions, out: &mut Fractions| {
        out.parts
            .extend(set.parts.into_iter().map(|p| format!("{head}{p}")));
        if set.empty {
            out.parts.push(head);
        }
    };
    let head = format!("{prefix}{}", low as char);
    if common < a.len() {
        extend(
            head,
            fractions_above(&a[common + 1..], strict_a, max_rest),
            &mut out,
        );
    } else {
        let above = fractions_above("", true, max_rest);
        out.parts
            .extend(above.parts.into_iter().map(|p| format!("{head}{p}")));
        if !strict_a {
            if !a.is_empty() {
                out.parts.push(format!(
                    "{a}{}",
                    optional_zeros(max.saturating_sub(a.len()))
                ));
            } else {
                out.empty = true;
                if max >= 1 {
                    out.parts.push(some_zeros(max));
                }
            }
        }
    }
    let head = format!("{prefix}{}", high as char);
    extend(
        head,
        fractions_below(&b[common + 1..], strict_b, max_rest),
        &mut out,
    );
    out
}

/// A whole-number string as an `i64`, `i64::MAX` when larger.
fn capped(whole: &str) -> i64 {
    whole.parse().unwrap_or(i64::MAX)
}

/// `decimal_a` against `decimal_b` by value (both from [`format_float`]).
fn compare(a: &str, b: &str) -> std::cmp::Ordering {
    let ((wa, fa), (wb, fb)) = (split(a), split(b));
    let pad = |f: &str| format!("{f:0<PRECISION$}");
    (wa.len(), wa, pad(fa)).cmp(&(wb.len(), wb, pad(fb)))
}

/// The integer range regex of `[start, end]` without its anchors, then any
/// fraction.
fn whole_numbers(start: i64, end: Option<i64>) -> String {
    let regex = integer_range_regex(Some(start), end);
    let inner = regex
        .strip_prefix('^')
        .and_then(|r| r.strip_suffix('$'))
        .unwrap_or(&regex);
    format!("{inner}(\\.\\d{{1,{PRECISION}}})?")
}

/// The alternatives of the magnitudes from `low` to `high` (`None`:
/// unbounded), decimals from [`on_grid`]; zero itself is never among them.
fn positive_parts(low: &str, strict_low: bool, high: Option<(&str, bool)>) -> Vec<String> {
    let mut parts = Vec::new();
    let (whole_low, fraction_low) = split(low);
    let strict_low = strict_low || (whole_low == "0" && fraction_low.is_empty());
    let low_value = capped(whole_low);
    let add = |whole: &str, set: Fractions, parts: &mut Vec<String>| {
        parts.extend(set.parts.into_iter().map(|p| format!("{whole}\\.{p}")));
        if set.empty {
            parts.push(whole.to_owned());
        }
    };
    let Some((high, strict_high)) = high else {
        add(
            whole_low,
            fractions_above(fraction_low, strict_low, PRECISION),
            &mut parts,
        );
        if low_value < i64::MAX {
            parts.push(whole_numbers(low_value + 1, None));
        }
        return parts;
    };
    let (whole_high, fraction_high) = split(high);
    let high_value = capped(whole_high);
    match compare(low, high) {
        std::cmp::Ordering::Greater => {}
        std::cmp::Ordering::Equal if strict_low || strict_high => {}
        std::cmp::Ordering::Equal if fraction_low.is_empty() => {
            parts.push(format!("{whole_low}(\\.{})?", some_zeros(PRECISION)));
        }
        std::cmp::Ordering::Equal => parts.push(format!(
            "{whole_low}\\.{fraction_low}{}",
            optional_zeros(PRECISION.saturating_sub(fraction_low.len()))
        )),
        std::cmp::Ordering::Less if whole_low == whole_high => {
            let set = fractions_between(
                fraction_low,
                strict_low,
                fraction_high,
                strict_high,
                PRECISION,
            );
            add(whole_low, set, &mut parts);
        }
        std::cmp::Ordering::Less => {
            add(
                whole_low,
                fractions_above(fraction_low, strict_low, PRECISION),
                &mut parts,
            );
            if high_value - low_value >= 2 {
                parts.push(whole_numbers(low_value + 1, Some(high_value - 1)));
            }
            add(
                whole_high,
                fractions_below(fraction_high, strict_high, PRECISION),
                &mut parts,
            );
        }
    }
    parts
}

/// The regex of the numbers (six decimals at most) between `start` and
/// `end` (finite; `None`: unbounded), as xgrammar 0.2.8 writes it
/// (`_generate_float_regex` in `xgrammar.testing`); `None` for an empty
/// range (xgrammar's `^()$`). One of them is set.
pub(super) fn number_range_regex(start: Option<End>, end: Option<End>) -> Option<String> {
    if let (Some(s), Some(e)) = (start, end)
        && (s.value > e.value || (s.value == e.value && (s.exclusive || e.exclusive)))
    {
        return None;
    }
    let mut parts = Vec::new();
    let negative = start.is_none_or(|s| s.value < 0.0);
    if negative {
        let (low, strict_low) = match end {
            Some(e) if e.value < 0.0 => on_grid(-e.value, true, e.exclusive),
            _ => ("0".to_owned(), true),
        };
        let high = start.map(|s| on_grid(-s.value, false, s.exclusive));
        let high = high.as_ref().map(|(h, strict)| (h.as_str(), *strict));
        let side = positive_parts(&low, strict_low, high);
        parts.extend(side.into_iter().map(|p| format!("-{p}")));
    }
    let includes_zero = start.is_none_or(|s| s.value < 0.0 || (s.value == 0.0 && !s.exclusive))
        && end.is_none_or(|e| e.value > 0.0 || (e.value == 0.0 && !e.exclusive));
    if includes_zero {
        parts.push(format!("0(\\.{})?", some_zeros(PRECISION)));
        if negative {
            parts.push(format!("-0(\\.{})", some_zeros(PRECISION)));
        }
    }
    if end.is_none_or(|e| e.value > 0.0) {
        let (low, strict_low) = match start {
            Some(s) if s.value > 0.0 => on_grid(s.value, true, s.exclusive),
            _ => ("0".to_owned(), true),
        };
        let high = end.map(|e| on_grid(e.value, false, e.exclusive));
        let high = high.as_ref().map(|(h, strict)| (h.as_str(), *strict));
        parts.extend(positive_parts(&low, strict_low, high));
    }
    (!parts.is_empty()).then(|| format!("^({})$", parts.join("|")))
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

    #[test]
    fn number_ranges_are_written_as_xgrammar_writes_them() {
        use super::{End, number_range_regex as n};
        let e = |value: f64, exclusive: bool| End { value, exclusive };
        for (start, end, regex) in [
            (
                Some(e(0.0078125, false)),
                None,
                r"^(0\.[1-9]\d{0,5}|0\.0[1-9]\d{0,4}|0\.00[8-9]\d{0,3}|0\.0079\d{0,2}|0\.0078[2-9]\d{0,1}|0\.00781[4-9]|0\.007813|([1-9]|[1-9]\d{1,})(\.\d{1,6})?)$",
            ),
            (
                None,
                Some(e(0.0078125, true)),
                r"^(-0\.[1-9]\d{0,5}|-0\.0[1-9]\d{0,4}|-0\.00[1-9]\d{0,3}|-0\.000[1-9]\d{0,2}|-0\.0000[1-9]\d{0,1}|-0\.00000[1-9]|-([1-9]|[1-9]\d{1,})(\.\d{1,6})?|0(\.0{1,6})?|-0(\.0{1,6})|0\.00[1-6]\d{0,3}|0\.000[1-9]\d{0,2}|0\.0000[1-9]\d{0,1}|0\.00000[1-9]|0\.007[0-7]\d{0,2}|0\.00780\d{0,1}|0\.00781[0-1]|0\.0070{1,3}|0\.00780{0,2}|0\.007810{0,1}|0\.007812|0\.007)$",
            ),
            (
                Some(e(0.1, false)),
                Some(e(0.2, false)),
                r"^(0\.1[1-9]\d{0,4}|0\.10[1-9]\d{0,3}|0\.100[1-9]\d{0,2}|0\.1000[1-9]\d{0,1}|0\.10000[1-9]|0\.10{1,5}|0\.1|0\.20{1,5}|0\.2)$",
            ),
            (
                Some(e(1.123456789, false)),
                None,
                r"^(1\.[2-9]\d{0,5}|1\.1[3-9]\d{0,4}|1\.12[4-9]\d{0,3}|1\.123[5-9]\d{0,2}|1\.1234[6-9]\d{0,1}|1\.12345[8-9]|1\.123457|([2-9]|[1-9]\d{1,})(\.\d{1,6})?)$",
            ),
            (
                Some(e(-3.5, false)),
                Some(e(-1.25, false)),
                r"^(-1\.[3-9]\d{0,5}|-1\.2[6-9]\d{0,4}|-1\.25[1-9]\d{0,3}|-1\.250[1-9]\d{0,2}|-1\.2500[1-9]\d{0,1}|-1\.25000[1-9]|-1\.250{0,4}|-((2))(\.\d{1,6})?|-3\.[0-4]\d{0,5}|-3\.0{1,6}|-3\.50{0,5}|-3)$",
            ),
            (
                Some(e(1e+20, true)),
                None,
                r"^(100000000000000000000\.[1-9]\d{0,5}|100000000000000000000\.0[1-9]\d{0,4}|100000000000000000000\.00[1-9]\d{0,3}|100000000000000000000\.000[1-9]\d{0,2}|100000000000000000000\.0000[1-9]\d{0,1}|100000000000000000000\.00000[1-9])$",
            ),
            (Some(e(2.5, false)), Some(e(2.5, false)), r"^(2\.50{0,5})$"),
            (
                None,
                Some(e(2.5, false)),
                r"^(-0\.[1-9]\d{0,5}|-0\.0[1-9]\d{0,4}|-0\.00[1-9]\d{0,3}|-0\.000[1-9]\d{0,2}|-0\.0000[1-9]\d{0,1}|-0\.00000[1-9]|-([1-9]|[1-9]\d{1,})(\.\d{1,6})?|0(\.0{1,6})?|-0(\.0{1,6})|0\.[1-9]\d{0,5}|0\.0[1-9]\d{0,4}|0\.00[1-9]\d{0,3}|0\.000[1-9]\d{0,2}|0\.0000[1-9]\d{0,1}|0\.00000[1-9]|((1))(\.\d{1,6})?|2\.[0-4]\d{0,5}|2\.0{1,6}|2\.50{0,5}|2)$",
            ),
            (
                Some(e(-0.5, true)),
                Some(e(0.5, true)),
                r"^(-0\.[1-4]\d{0,5}|-0\.0[1-9]\d{0,4}|-0\.00[1-9]\d{0,3}|-0\.000[1-9]\d{0,2}|-0\.0000[1-9]\d{0,1}|-0\.00000[1-9]|0(\.0{1,6})?|-0(\.0{1,6})|0\.[1-4]\d{0,5}|0\.0[1-9]\d{0,4}|0\.00[1-9]\d{0,3}|0\.000[1-9]\d{0,2}|0\.0000[1-9]\d{0,1}|0\.00000[1-9])$",
            ),
            (
                Some(e(1.0, false)),
                Some(e(5.0, false)),
                r"^(1\.[1-9]\d{0,5}|1\.0[1-9]\d{0,4}|1\.00[1-9]\d{0,3}|1\.000[1-9]\d{0,2}|1\.0000[1-9]\d{0,1}|1\.00000[1-9]|1\.0{1,6}|1|(([2-4]))(\.\d{1,6})?|5\.0{1,6}|5)$",
            ),
        ] {
            assert_eq!(n(start, end).as_deref(), Some(regex), "{start:?} {end:?}");
        }
        // Empty once on the grid of six decimals, or empty outright.
        assert_eq!(
            n(Some(e(0.1234561, false)), Some(e(0.1234569, false))),
            None
        );
        assert_eq!(n(Some(e(2.0, true)), Some(e(2.0, false))), None);
        assert_eq!(n(Some(e(3.0, false)), Some(e(2.0, false))), None);
    }

    #[test]
    fn extreme_number_bounds_do_not_panic() {
        use super::{End, number_range_regex as n};
        let values = [
            0.0,
            -0.0,
            f64::MIN_POSITIVE,
            5e-324,
            1e-7,
            0.9999995,
            9.223_372_036_854_776e18,
            -9.223_372_036_854_776e18,
            1.8e19,
            1e300,
            f64::MAX,
            -f64::MAX,
        ];
        for &a in &values {
            for &b in &values {
                for exclusive in [false, true] {
                    let (a, b) = (
                        End {
                            value: a,
                            exclusive,
                        },
                        End {
                            value: b,
                            exclusive: !exclusive,
                        },
                    );
                    let _ = n(Some(a), Some(b));
                    let _ = n(Some(a), None);
                    let _ = n(None, Some(b));
                }
            }
        }
    }
}
