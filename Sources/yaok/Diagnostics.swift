import YaOK

/// The text form of the node's diagnostics (docs/ABI.md, "diagnostics"), for `status`.
enum Diagnostics {
    static func render(_ d: JSON) -> [String] {
        var lines: [String] = []
        let transports = d["transports"]?.array ?? []
        lines.append("Transports:" + (transports.isEmpty ? " none" : ""))
        for t in transports {
            var line = "  \(t["display_name"]?.string ?? "?") (\(t["name"]?.string ?? "?"))  \(t["state"]?.string ?? "?")"
            if let error = t["error"]?.string { line += ": \(error)" }
            if t["state"]?.string == "running" {
                let links = t["links"]?.int ?? 0
                line += ", \(links) \(links == 1 ? "link" : "links")"
            }
            if let at = t["last_activity_ms"]?.int { line += ", last activity \(Output.time(at))" }
            lines.append(line)
            if t["state"]?.string == "running", let c = t["connection"] { lines.append("    Connection: \(connection(transport: c))") }
            if t["name"]?.string == "relay", let details = t["details"], let status = details["status"]?.string {
                // AC-042-01, AC-060-01: "Relay: Connected" and the last sync.
                var relay = "    Relay: \(status)"
                if let sync = details["last_sync_ms"]?.int { relay += ", last sync \(Output.time(sync))" }
                lines.append(relay)
            }
        }
        if let i = d["internet"], let line = i["line"]?.string {
            // AC-060-01: "Internet: Available" and why.
            lines.append("\(line) (\(i["why"]?.string ?? "?"))")
        }
        for case .string(let warning) in d["warnings"]?.array ?? [] { lines.append("warning: \(warning)") }
        if let contacts = d["contacts"]?.array, !contacts.isEmpty {
            lines.append("Contacts:")
            for c in contacts {
                lines.append("  \(c["name"]?.string ?? "?")  \(connection(c["connection"]))" + forwardSecrecy(c["forward_secrecy"]))
            }
        }
        if let outbox = d["outbox"]?.array {
            let failed = outbox.filter { $0["status"]?.string == "failed" }.count
            lines.append(outbox.isEmpty ? "Outbox: empty"
                         : "Outbox: \(outbox.count) waiting" + (failed > 0 ? " (\(failed) failed)" : "") + "; `yaok outbox` lists them")
        }
        if let held = d["held_packets"]?.int, held > 0 {
            lines.append("Held until the next unlock: \(held) \(held == 1 ? "packet" : "packets")")
        }
        if let c = d["carry"], !c.isNull {
            lines += carry(c)
        }
        return lines
    }

    /// A contact's "forward_secrecy" object (docs/ABI.md; PROTOCOL.md §13.5): never silent
    /// about messages that went to the long-term key.
    static func forwardSecrecy(_ f: JSON?) -> String {
        guard let f, !f.isNull else { return "" }
        let seals = f["long_term_seals"]?.int ?? 0
        let sealed = seals == 0 ? "" : ", \(seals) sealed to the long-term key"
        switch f["state"]?.string {
        case "on": return "  forward secrecy: on" + sealed
        case "prekey":
            let until = (f["prekey_exposure_until_ms"]?.int).map { ForwardSecrecyStatus.utcDate($0) } ?? "?"
            return "  forward secrecy: prekey (exposure until \(until) 00:00 UTC" + sealed + ")"
        case "not_yet": return "  forward secrecy: not yet (long-term key: no receiver key from this contact" + sealed + ")"
        case "off": return "  forward secrecy: off"
        case let other: return "  forward secrecy: \(other ?? "?")"
        }
    }

    /// The "carry" object (docs/ABI.md): the mode and caps, what is held, and the counters.
    static func carry(_ c: JSON) -> [String] {
        func n(_ key: String) -> Int64 { c[key]?.int ?? 0 }
        let mode: String
        switch c["mode"]?.string {
        case "anyone": mode = "for anyone"
        case "contacts": mode = "on links with contacts only"
        case "off": mode = "off"
        case let other: mode = other ?? "?"
        }
        return ["Carrying \(mode): \(n("packets_held")) of \(n("max_packets")) packets held, "
                    + "\(n("bytes_held")) of \(n("max_bytes")) bytes",
                "  since start: \(n("packets_taken")) taken, \(n("packets_handed_on")) handed on, "
                    + "\(n("messages_delivered_through_carriers")) received and \(n("acks_through_carriers")) delivered through carriers, "
                    + "\(n("packets_purged")) purged, \(n("packets_refused")) refused"]
    }

    /// A transport's "connection" object: "connected", "disconnected (pin mismatch): …,
    /// next retry 12:03:05".
    static func connection(transport c: JSON) -> String {
        var text = c["state"]?.string ?? "?"
        if let reason = c["reason"]?.string { text += " (\(reason.replacingOccurrences(of: "_", with: " ")))" }
        if let detail = c["detail"]?.string { text += ": \(detail)" }
        if let retry = c["next_retry_ms"]?.int { text += ", next retry \(Output.time(retry))" }
        return text
    }

    /// A connection object (as in "contact") as `contacts list` words it.
    static func connection(_ c: JSON?) -> String {
        switch c?["state"]?.string {
        case "online": return "Online (\(c?["transport"]?.string ?? "?"))"
        case "last_seen": return "Last seen \(Output.time(c?["last_seen_ms"]?.int ?? 0))"
        default: return "Never connected"
        }
    }
}
