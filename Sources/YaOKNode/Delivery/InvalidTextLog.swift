/// How many `invalid_text` security events each contact may cause: every new message ID
/// that is not UTF-8 is one, and a contact can send thousands, which would bury key-change
/// events and slow every listing of the log. Per contact and per day the first
/// `loggedPerDay` are logged one by one; the rest are counted, and the count is logged as
/// one summary event ("N more …") when the day ends: by the delivery timer's sweep (at
/// least hourly), or by the contact's next one, whichever comes first (docs/PROTOCOL.md §3.2).
/// Each message still carries `repaired`, so nothing is lost by not logging it.
/// In memory: a restart starts a fresh day (at most `loggedPerDay` more events).
struct InvalidTextLog {
    static let loggedPerDay = 3
    static let dayMs: Int64 = 86_400_000

    private struct Day {
        var start: Int64
        var logged = 0
        var unlogged = 0
    }
    private var days: [Int64: Day] = [:]

    /// What to append to the log for one more invalid text from `contactID` at `now`: a
    /// summary of the day before (if it left some unlogged), then whether to log this one.
    mutating func record(contactID: Int64, now: Int64) -> (summary: Int?, logThis: Bool, last: Bool) {
        var day = days[contactID] ?? Day(start: now)
        var summary: Int?
        if now - day.start >= InvalidTextLog.dayMs || now < day.start {
            if day.unlogged > 0 { summary = day.unlogged }
            day = Day(start: now)
        }
        let logThis = day.logged < InvalidTextLog.loggedPerDay
        if logThis { day.logged += 1 } else { day.unlogged += 1 }
        days[contactID] = day
        return (summary, logThis, logThis && day.logged == InvalidTextLog.loggedPerDay)
    }

    /// The counts of days that ended by `now` with texts left unlogged, by contact; those
    /// days are forgotten (a day that ended with nothing unlogged is forgotten too).
    mutating func endedDays(now: Int64) -> [(contactID: Int64, unlogged: Int)] {
        let ended = days.filter { now - $0.value.start >= InvalidTextLog.dayMs || now < $0.value.start }
        for contactID in ended.keys { days[contactID] = nil }
        return ended.filter { $0.value.unlogged > 0 }.map { ($0.key, $0.value.unlogged) }.sorted { $0.contactID < $1.contactID }
    }

    static func summary(_ count: Int, contactID: Int64) -> String {
        "\(count) more messages from contact \(contactID) were not valid UTF-8 (stored repaired, not logged one by one)"
    }
}
