//! ISO-8601 timestamps as Pi writes and reads them.
//!
//! Pi writes `new Date().toISOString()` (`2026-01-05T09:00:14.749Z`) and reads with
//! `new Date(s).getTime()`. [`parse_iso_ms`] accepts the ISO forms JavaScript's `Date`
//! accepts (date only, minutes, seconds, fractions, `Z` or `±hh:mm`); anything else is
//! `None`, which is JavaScript's `NaN`. A string without an offset is read as UTC, which
//! is what `Date` does on the UTC machines Pi sessions are typically examined on.

/// Milliseconds since the epoch, as `new Date(s).getTime()`; `None` for `NaN`.
pub fn parse_iso_ms(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let mut p = 0usize;
    let num = |p: &mut usize, n: usize| -> Option<i64> {
        if *p + n > b.len() {
            return None;
        }
        let mut v = 0i64;
        for &c in &b[*p..*p + n] {
            if !c.is_ascii_digit() {
                return None;
            }
            v = v * 10 + (c - b'0') as i64;
        }
        *p += n;
        Some(v)
    };
    let year = if b.first().is_some_and(|&c| c == b'+' || c == b'-') {
        let neg = b[0] == b'-';
        p = 1;
        let y = num(&mut p, 6)?;
        if neg && y == 0 {
            return None;
        }
        if neg { -y } else { y }
    } else {
        num(&mut p, 4)?
    };
    let (mut month, mut day) = (1, 1);
    if p < b.len() && b[p] == b'-' {
        p += 1;
        month = num(&mut p, 2)?;
        if p < b.len() && b[p] == b'-' {
            p += 1;
            day = num(&mut p, 2)?;
        }
    }
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let (mut h, mut mi, mut sec, mut ms) = (0i64, 0i64, 0i64, 0i64);
    let mut offset_min = 0i64;
    if p < b.len() && (b[p] == b'T' || b[p] == b't' || b[p] == b' ') {
        p += 1;
        h = num(&mut p, 2)?;
        if p >= b.len() || b[p] != b':' {
            return None;
        }
        p += 1;
        mi = num(&mut p, 2)?;
        if p < b.len() && b[p] == b':' {
            p += 1;
            sec = num(&mut p, 2)?;
            if p < b.len() && (b[p] == b'.' || b[p] == b',') {
                p += 1;
                let start = p;
                let mut frac = 0i64;
                let mut digits = 0;
                while p < b.len() && b[p].is_ascii_digit() {
                    if digits < 3 {
                        frac = frac * 10 + (b[p] - b'0') as i64;
                        digits += 1;
                    }
                    p += 1;
                }
                if p == start {
                    return None;
                }
                while digits < 3 {
                    frac *= 10;
                    digits += 1;
                }
                ms = frac;
            }
        }
        if h > 24 || mi > 59 || sec > 59 || (h == 24 && (mi != 0 || sec != 0 || ms != 0)) {
            return None;
        }
        if p < b.len() {
            match b[p] {
                b'Z' | b'z' => p += 1,
                b'+' | b'-' => {
                    let sign = if b[p] == b'-' { -1 } else { 1 };
                    p += 1;
                    let oh = num(&mut p, 2)?;
                    if p < b.len() && b[p] == b':' {
                        p += 1;
                    }
                    let om = num(&mut p, 2)?;
                    if oh > 23 || om > 59 {
                        return None;
                    }
                    offset_min = sign * (oh * 60 + om);
                }
                _ => return None,
            }
        }
    }
    if p != b.len() {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let t = ((days * 24 + h) * 60 + mi - offset_min) * 60_000 + sec * 1000 + ms;
    // ECMAScript time values are limited to ±8.64e15 ms.
    if t.abs() > 8_640_000_000_000_000 {
        return None;
    }
    Some(t)
}

/// `new Date(ms).toISOString()`.
pub fn format_iso_ms(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    let (h, mi, s, f) = (rem / 3_600_000, rem / 60_000 % 60, rem / 1000 % 60, rem % 1000);
    if (0..=9999).contains(&y) {
        format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{f:03}Z")
    } else {
        let sign = if y < 0 { '-' } else { '+' };
        format!("{sign}{:06}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{f:03}Z", y.abs())
    }
}

/// Milliseconds since the epoch, now.
pub fn now_ms() -> i64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    d.as_millis() as i64
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

// Howard Hinnant's civil calendar algorithms.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pi_timestamps_round_trip() {
        let s = "2026-01-05T09:00:14.749Z";
        let ms = parse_iso_ms(s).unwrap();
        assert_eq!(ms, 1_767_603_614_749);
        assert_eq!(format_iso_ms(ms), s);
        assert_eq!(format_iso_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(parse_iso_ms("1969-12-31T23:59:59.999Z"), Some(-1));
    }

    #[test]
    fn other_iso_forms() {
        assert_eq!(parse_iso_ms("2026-01-05"), parse_iso_ms("2026-01-05T00:00:00.000Z"));
        assert_eq!(parse_iso_ms("2026-01-05T09:00Z"), parse_iso_ms("2026-01-05T09:00:00Z"));
        assert_eq!(parse_iso_ms("2026-01-05T10:00:00+01:00"), parse_iso_ms("2026-01-05T09:00:00Z"));
        assert_eq!(parse_iso_ms("2026-01-05T09:00:00.1Z"), Some(1_767_603_600_100));
        assert_eq!(parse_iso_ms("2026-01-05T09:00:00.123456Z"), Some(1_767_603_600_123));
        assert_eq!(parse_iso_ms("2024-02-29T00:00:00Z").is_some(), true);
    }

    #[test]
    fn invalid_is_nan() {
        for s in ["", "yesterday", "2026-13-01", "2023-02-29", "2026-01-05T25:00Z", "2026-01-05T09:00:00.Z", "2026-01-05T09:00:00Zjunk"] {
            assert_eq!(parse_iso_ms(s), None, "{s}");
        }
    }
}
