import Testing
import Foundation
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

    /// Review finding (issue 17): the chat screen hid controls but showed bidi overrides and
    /// isolates as they were, so a contact could reorder a line there ("exe.txt" shown as
    /// "txt.exe"). It now hides what `Output.printable` hides.
    @Test func theChatScreenHidesWhatPrintableHides() {
        let hostile = "\u{1B}[2J \u{202A}a\u{202B}b\u{202C}c\u{202D}d\u{202E}exe.txt\u{2066}e\u{2067}f\u{2068}g\u{2069} \u{2028}"
        let screen = ChatScreen.visible(hostile)
        #expect(!screen.unicodeScalars.contains { Output.hidden($0) })
        #expect(screen.unicodeScalars.filter { $0 == "\u{FFFD}" }.count == 11)
        #expect(screen.replacingOccurrences(of: "\u{FFFD}", with: "")
                == Output.printable(hostile).replacingOccurrences(of: "\u{FFFD}", with: ""))
        for line in ChatScreen.wrap("x \u{202E}gnp.exe", 80) { #expect(!line.unicodeScalars.contains { Output.hidden($0) }) }
    }
}
