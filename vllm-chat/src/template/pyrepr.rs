//! Python's `repr` of floats, shared by `tojson` and template output.

/// Writes `f` (finite) as Python's `repr(float)`: the shortest digits that read back,
/// positional notation for exponents in `-4..16`, else `1e+16` / `1.5e-05` style.
pub(crate) fn write_float(out: &mut String, f: f64) {
    // `{:e}` gives the shortest round-trip digits with an exponent: "1.5e-5".
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    out.push_str(sign);
    if (-4..16).contains(&exp) {
        if exp < 0 {
            out.push_str("0.");
            for _ in 0..(-exp - 1) {
                out.push('0');
            }
            out.push_str(&digits);
        } else {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                out.push_str(&digits);
                for _ in digits.len()..int_len {
                    out.push('0');
                }
                out.push_str(".0");
            } else {
                out.push_str(&digits[..int_len]);
                out.push('.');
                out.push_str(&digits[int_len..]);
            }
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push_str(&format!(
            "e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.abs()
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::write_float;

    fn repr(f: f64) -> String {
        let mut s = String::new();
        write_float(&mut s, f);
        s
    }

    #[test]
    fn matches_python_repr() {
        // Expected values are Python 3's repr() of the same floats.
        for (f, want) in [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (-2.5, "-2.5"),
            (1e16, "1e+16"),
            (1.5e-5, "1.5e-05"),
            (0.0001, "0.0001"),
            (123456789.125, "123456789.125"),
            (1e22, "1e+22"),
            (0.0, "0.0"),
            (9999999999999998.0, "9999999999999998.0"),
        ] {
            assert_eq!(repr(f), want, "{f}");
        }
    }
}
