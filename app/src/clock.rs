//! The one format of every time a page shows once interactive, the live indicator's included
//! (docs/design.md "What the person sees"): 24-hour local time, with the date when not today.

/// A local date and time as the browser reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalTime {
    pub year: i32,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
}

/// The one format of every time a page shows once interactive: 24-hour local time, `07:15:03` on the
/// reader's `today` (year, month, day), `2026-12-02 07:15:03` on any other day.
pub fn clock_text(at: LocalTime, today: (i32, u32, u32)) -> String {
    let clock = format!("{:02}:{:02}:{:02}", at.hour, at.minute, at.second);
    if (at.year, at.month, at.day) == today {
        clock
    } else {
        format!("{:04}-{:02}-{:02} {clock}", at.year, at.month, at.day)
    }
}

/// `ms` (`Date.now()` scale) in the reader's local time, as [`clock_text`] writes it; `None` for a time
/// the browser cannot read.
#[cfg(feature = "hydrate")]
pub fn local_text(ms: f64) -> Option<String> {
    let parts = |d: &js_sys::Date| LocalTime {
        year: d.get_full_year() as i32,
        month: d.get_month() + 1,
        day: d.get_date(),
        hour: d.get_hours(),
        minute: d.get_minutes(),
        second: d.get_seconds(),
    };
    let date = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(ms));
    if date.get_time().is_nan() {
        return None;
    }
    let now = parts(&js_sys::Date::new_0());
    Some(clock_text(parts(&date), (now.year, now.month, now.day)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_time_reads_in_one_24_hour_format_with_the_date_when_not_today() {
        let at = LocalTime {
            year: 2026,
            month: 12,
            day: 3,
            hour: 7,
            minute: 5,
            second: 9,
        };
        assert_eq!(clock_text(at, (2026, 12, 3)), "07:05:09");
        assert_eq!(clock_text(at, (2026, 12, 4)), "2026-12-03 07:05:09");
        let late = LocalTime {
            hour: 23,
            minute: 59,
            second: 59,
            ..at
        };
        assert_eq!(clock_text(late, (2027, 12, 3)), "2026-12-03 23:59:59");
    }
}
