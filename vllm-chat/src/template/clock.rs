//! `strftime_now(format)`: the date as Python's `datetime.now().strftime(format)` writes it.
//!
//! Templates (Llama 3.1+, Granite, …) put today's date in the system prompt. The
//! clock is a setting of the renderer so that tests and reproducible pipelines can
//! pin it, as the parity fixtures do.

use std::time::{SystemTime, UNIX_EPOCH};

/// Where `strftime_now` reads the time from. Times are UTC (vLLM servers run in UTC).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Clock {
    /// The system clock.
    #[default]
    System,
    /// A fixed instant, in seconds since the Unix epoch (UTC).
    Fixed(i64),
}

impl Clock {
    fn now(self) -> i64 {
        match self {
            Clock::System => SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs() as i64)
                .unwrap_or(0),
            Clock::Fixed(t) => t,
        }
    }

    /// Formats the current time with a C/Python `strftime` format.
    pub(crate) fn strftime_now(self, format: &str) -> String {
        strftime(self.now(), format)
    }
}

const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// A broken-down UTC time.
struct Tm {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    /// 0 = Monday.
    weekday: u32,
    /// 1-based day of the year.
    yday: u32,
}

fn breakdown(t: i64) -> Tm {
    let days = t.div_euclid(86_400);
    let secs = t.rem_euclid(86_400) as u32;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    const CUM: [u32; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
    let yday = CUM[month as usize - 1] + day + u32::from(leap && month > 2);
    Tm {
        year,
        month,
        day,
        hour: secs / 3600,
        minute: secs / 60 % 60,
        second: secs % 60,
        // 1970-01-01 was a Thursday (3 when Monday is 0).
        weekday: (days + 3).rem_euclid(7) as u32,
        yday,
    }
}

/// `strftime` for the directives that glibc supports, including the `%-d` no-padding flag.
fn strftime(t: i64, format: &str) -> String {
    let tm = breakdown(t);
    let mut out = String::with_capacity(format.len() + 16);
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = chars.next();
        let no_pad = spec == Some('-');
        if no_pad {
            spec = chars.next();
        }
        let num = |out: &mut String, v: i64, width: usize| {
            if no_pad {
                out.push_str(&v.to_string());
            } else {
                out.push_str(&format!("{v:0width$}"));
            }
        };
        let hour12 = if tm.hour.is_multiple_of(12) {
            12
        } else {
            tm.hour % 12
        };
        match spec {
            Some('Y') => out.push_str(&tm.year.to_string()),
            Some('y') => num(&mut out, tm.year.rem_euclid(100), 2),
            Some('m') => num(&mut out, tm.month.into(), 2),
            Some('d') => num(&mut out, tm.day.into(), 2),
            Some('e') => out.push_str(&format!("{:2}", tm.day)),
            Some('H') => num(&mut out, tm.hour.into(), 2),
            Some('I') => num(&mut out, hour12.into(), 2),
            Some('M') => num(&mut out, tm.minute.into(), 2),
            Some('S') => num(&mut out, tm.second.into(), 2),
            Some('j') => num(&mut out, tm.yday.into(), 3),
            Some('p') => out.push_str(if tm.hour < 12 { "AM" } else { "PM" }),
            Some('A') => out.push_str(DAYS[tm.weekday as usize]),
            Some('a') => out.push_str(&DAYS[tm.weekday as usize][..3]),
            Some('B') => out.push_str(MONTHS[tm.month as usize - 1]),
            Some('b') | Some('h') => out.push_str(&MONTHS[tm.month as usize - 1][..3]),
            Some('u') => out.push_str(&(tm.weekday + 1).to_string()),
            Some('w') => out.push_str(&((tm.weekday + 1) % 7).to_string()),
            Some('F') => out.push_str(&format!("{}-{:02}-{:02}", tm.year, tm.month, tm.day)),
            Some('T') => out.push_str(&format!("{:02}:{:02}:{:02}", tm.hour, tm.minute, tm.second)),
            Some('D') => out.push_str(&format!(
                "{:02}/{:02}/{:02}",
                tm.month,
                tm.day,
                tm.year.rem_euclid(100)
            )),
            Some('Z') => out.push_str("UTC"),
            Some('z') => out.push_str("+0000"),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                if no_pad {
                    out.push('-');
                }
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::strftime;

    #[test]
    fn formats_like_python() {
        // 2026-01-15 10:30:45 UTC, a Thursday; strings are Python's strftime of that instant.
        let t = 1_768_473_045;
        assert_eq!(strftime(t, "%d %b %Y"), "15 Jan 2026");
        assert_eq!(strftime(t, "%Y-%m-%d %H:%M:%S"), "2026-01-15 10:30:45");
        assert_eq!(
            strftime(t, "%A, %B %-d, %Y %I:%M %p (%j)"),
            "Thursday, January 15, 2026 10:30 AM (015)"
        );
        // 2024-02-29 (leap day), 23:59:59.
        assert_eq!(
            strftime(1_709_251_199, "%Y-%m-%d %H:%M:%S %a %j"),
            "2024-02-29 23:59:59 Thu 060"
        );
    }
}
