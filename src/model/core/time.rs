//! ISO-8601 timestamps as Pi writes them: `new Date().toISOString()`
//! (`2026-01-05T09:00:14.749Z`). Reading them back as JavaScript's `Date` does is
//! [`crate::model::core::js::js_date_ms`].

/// `new Date(ms).toISOString()`.
pub fn format_iso_ms(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    let (h, mi, s, f) = (
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000,
    );
    if (0..=9999).contains(&y) {
        format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{f:03}Z")
    } else {
        let sign = if y < 0 { '-' } else { '+' };
        format!(
            "{sign}{:06}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{f:03}Z",
            y.abs()
        )
    }
}

/// Milliseconds since the epoch, now.
pub fn now_ms() -> i64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    d.as_millis() as i64
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
    use crate::model::core::js::js_date_ms;

    #[test]
    fn pi_timestamps_round_trip() {
        let s = "2026-01-05T09:00:14.749Z";
        let ms = js_date_ms(s).unwrap();
        assert_eq!(ms, 1_767_603_614_749);
        assert_eq!(format_iso_ms(ms), s);
        assert_eq!(format_iso_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_iso_ms(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(format_iso_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }
}
