import Testing
@testable import yaok

/// Review finding (issue 11): text from contacts, QR codes and relays reached the terminal
/// raw in `history`, `run` and `contacts add`. Every human-readable line goes through
/// `Output.printable`.
@Suite struct PrintableTests {
    @Test func escapesAndOverridesAreShownNotObeyed() {
        let hostile = "\u{1B}]0;PWNED\u{07}\u{1B}[2J\u{1B}[31mFAKE\u{9B}2J \u{202E}evil\u{2066}"
        let shown = Output.printable(hostile)
        #expect(!shown.unicodeScalars.contains { $0.value < 0x20 || (0x7F..<0xA0).contains($0.value) })
        #expect(!shown.unicodeScalars.contains { (0x202A...0x202E).contains($0.value) || (0x2066...0x2069).contains($0.value) })
        #expect(shown.contains("PWNED") && shown.contains("FAKE"))
        // Line breaks, tabs and ordinary text stay.
        #expect(Output.printable("a\tb\nç 👋") == "a\tb\nç 👋")
    }
}
