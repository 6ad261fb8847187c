import Testing
@testable import yaok
import YaOK

/// `yaok chat` without a terminal: the line editor and the screen layout. The whole
/// command, through a pseudo-terminal, is scripts/test-chat.
@Suite struct ChatTests {
    @Test func editorAssemblesUTF8AndRemovesWholeCharacters() {
        var editor = ChatEditor()
        #expect(editor.feed(Array("ça va 👋🏽".utf8)) == [])
        #expect(editor.line == "ça va 👋🏽")
        _ = editor.feed([0x7F])  // Backspace: the emoji with its skin tone, at once
        #expect(editor.line == "ça va ")
        // A character split across two reads.
        let bytes = Array("é".utf8)
        _ = editor.feed([bytes[0]])
        #expect(editor.line == "ça va ")
        _ = editor.feed([bytes[1]])
        #expect(editor.line == "ça va é")
        // A broken sequence is dropped; the next byte still counts.
        _ = editor.feed([0xE2, 0x41])
        #expect(editor.line == "ça va éA")
        _ = editor.feed([0x17])  // Ctrl-W
        #expect(editor.line == "ça va ")
        _ = editor.feed([0x15])  // Ctrl-U
        #expect(editor.line.isEmpty)
    }

    @Test func editorActions() {
        var editor = ChatEditor()
        #expect(editor.feed(Array("hi\r".utf8)) == [.submit("hi")])
        #expect(editor.feed([0x03]) == [.leave])
        #expect(editor.feed([0x12]) == [.retry])
        #expect(editor.feed([0x04]) == [])  // Ctrl-D with text on the line: refused, said why
        #expect(editor.refusal != nil)
        editor.clear()
        #expect(editor.feed([0x04]) == [.leave])
        // Arrow keys are skipped; bracketed paste keeps line breaks in the message.
        editor.clear()
        #expect(editor.feed(Array("\u{1B}[Aa\u{1B}[200~b\rc\u{1B}[201~".utf8)) == [.dismiss, .dismiss, .dismiss])
        #expect(editor.line == "ab\nc")
    }

    @Test func editorCountsDownToTheLimit() {
        var editor = ChatEditor()
        _ = editor.feed(Array(String(repeating: "x", count: ChatEditor.limit - ChatEditor.countdownFrom).utf8))
        #expect(editor.countdown == nil)
        _ = editor.feed(Array("x".utf8))
        #expect(editor.countdown == "1023 bytes left of 10 KB")
        _ = editor.feed(Array(String(repeating: "é", count: 600).utf8))  // 1200 bytes: 511 fit
        #expect(editor.bytes == ChatEditor.limit - 1)
        #expect(editor.refusal != nil)
        #expect(editor.countdown == "1 byte left of 10 KB")
        _ = editor.feed(Array("y".utf8))
        #expect(editor.bytes == ChatEditor.limit)
        #expect(editor.countdown == "0 bytes left of 10 KB")
    }

    static let snapshot = ChatSnapshot(.object([
        ("contact_id", .int(1)), ("contact", .string("Bob")), ("deleted", .bool(false)),
        ("connection", .object([("state", .string("online")), ("transport", .string("WiFi"))])),
        ("messages", .array([
            .object([("message_id", .string("01")), ("direction", .string("outgoing")), ("status", .string("delivered")),
                     ("text", .string("hello")), ("sender_timestamp_ms", .int(0))]),
            .object([("message_id", .string("02")), ("direction", .string("incoming")), ("status", .string("delivered")),
                     ("text", .string("evil \u{1B}]0;title\u{07} text")), ("sender_timestamp_ms", .int(0))]),
            .object([("message_id", .string("03")), ("direction", .string("outgoing")), ("status", .string("failed")),
                     ("text", .string("lost")), ("sender_timestamp_ms", .int(0))]),
        ])),
        ("transports", .array([.object([("name", .string("relay")), ("display_name", .string("Relay")),
                                        ("state", .string("running")),
                                        ("details", .object([("status", .string("Disconnected: refused. Retrying in 8 s."))]))])])),
        ("warnings", .array([])),
    ]))

    @Test func screenShowsMarksIssuesAndNoEscapes() {
        #expect(Self.snapshot.failed.map(\.messageID) == ["03"])
        let frame = ChatScreen.frame(Self.snapshot, input: "draft", notice: "Nothing to send", countdown: "12 bytes left of 10 KB",
                                     overlay: [], rows: 10, columns: 60)
        #expect(frame.lines.count == 10)
        #expect(frame.lines[0].hasPrefix(" Bob  ·  Online (WiFi)"))
        #expect(frame.lines.contains { $0.hasSuffix("You: hello  ✓✓") })
        #expect(frame.lines.contains { $0.hasSuffix("You: lost  ! failed: /retry") })
        #expect(frame.lines.contains("⚠ Relay: Disconnected: refused. Retrying in 8 s."))
        #expect(!frame.lines.joined().contains("\u{1B}"))  // a contact cannot drive the terminal
        #expect(frame.lines[8].hasPrefix("Nothing to send") && frame.lines[8].hasSuffix("12 bytes left of 10 KB"))
        #expect(frame.lines[9] == "> draft")
        #expect(frame.cursorColumn == 8)
        #expect(frame.lines.allSatisfy { ChatScreen.displayWidth($0) <= 60 })
    }

    @Test func screenWrapsAndKeepsTheNewest() {
        #expect(ChatScreen.wrap("abcdef", 4) == ["abcd", "ef"])
        #expect(ChatScreen.wrap("a\nb", 4) == ["a", "b"])
        #expect(ChatScreen.wrap("日本語", 4) == ["日本", "語"])
        #expect(ChatScreen.tail("hello", 3) == "llo")
        let frame = ChatScreen.frame(Self.snapshot, input: String(repeating: "z", count: 500), notice: nil, countdown: nil,
                                     overlay: ChatScreen.help, rows: 6, columns: 40)
        #expect(frame.lines.count == 6)
        #expect(frame.lines[4].isEmpty)
        #expect(frame.lines[5] == "> " + String(repeating: "z", count: 37))
        #expect(frame.lines[1] == ChatScreen.wrap(ChatScreen.help.last!, 40).last)  // the newest line of what is shown
        #expect(frame.lines[2].hasPrefix("⚠ Relay: Disconnected"))  // wrapped over two lines, not cut
        #expect(frame.lines[3].hasSuffix("in 8 s."))
    }

    @Test func conversationRequestRoundTrips() throws {
        let request = PeerRequest.conversation(contact: "Bob", limit: 50)
        #expect(try PeerRequest(json: request.json()) == request)
        #expect(throws: CLIError.self) { try PeerRequest(json: .object([("cmd", .string("conversation")), ("contact", .string("Bob"))])) }
    }
}
