import Foundation
import ArgumentParser
import YaOK

/// Contacts (US-010, US-011, US-012, US-031). A contact is named by its ID, name, user ID
/// or a fingerprint prefix.
struct Contacts: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Add, list, show, verify, rename and delete contacts.",
        subcommands: [Add.self, List.self, Show.self, Verify.self, Rename.self, Delete.self],
        defaultSubcommand: List.self)

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a contact from their card: its text, or a photo of its QR code.",
            discussion: """
                The card is the text `yaok card` prints (yaok:2:…), a PNG or JPEG photo or \
                screenshot of its QR code, or a text file holding the card text. The contact's \
                name and fingerprint are shown first; in a terminal you are asked before the \
                contact is added (--yes adds without asking).
                """)
        @OptionGroup var options: GlobalOptions
        @Argument(help: "The card text (yaok:2:…), or a PNG/JPEG photo of the QR code, or a file holding the card text.")
        var card: String
        @Flag(help: "Only show the preview (name and fingerprint); add nothing.") var preview = false
        @Flag(name: .shortAndLong, help: "Add without asking, even in a terminal.") var yes = false

        func run() throws {
            try Output.run(json: options.json) {
                let source = try CardSource.resolve(card)
                let node = try options.unlockedNode()
                let p = try node.previewContact(card: source.text)
                var shown = (source.origin.map { "Card read from \($0)\n" } ?? "")
                    + "\(p.name)\n  fingerprint \(p.fingerprint)"
                if p.existingContactID != nil { shown += "\n  already in your contacts" }
                if preview {
                    Output.emit(p.json, asJSON: options.json) { shown }
                    return
                }
                if !options.json {
                    print(Output.printable(shown))
                    // A person at a terminal confirms after comparing the fingerprint;
                    // scripts (no terminal on stdin or stdout) are not asked.
                    if !yes, p.existingContactID == nil, isatty(0) == 1, isatty(1) == 1 {
                        print("Add \(p.name) to your contacts? [y/N] ", terminator: "")
                        let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
                        guard answer == "y" || answer == "yes" else {
                            print("Not added")
                            return
                        }
                    }
                }
                let contact = try node.addContact(card: source.text)
                Output.emit(contact.json, asJSON: options.json) { "Added \(contact.name) (\(contact.id))" }
            }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List contacts.")
        @OptionGroup var options: GlobalOptions

        func run() throws {
            try Output.run(json: options.json) {
                let all = try options.unlockedNode().contacts()
                Output.emit(.array(all.map(\.json)), asJSON: options.json) {
                    all.isEmpty ? "No contacts yet" : all.map {
                        "\($0.id)  \($0.name)  \($0.fingerprint.short)\($0.verified ? "  ✓ verified" : "")  \(Output.connection($0.connection))"
                    }.joined(separator: "\n")
                }
            }
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show a contact's details.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "ID, name, user ID or fingerprint prefix.") var contact: String

        func run() throws {
            try Output.run(json: options.json) {
                let c = try options.unlockedNode().findContact(contact)
                Output.emit(c.json, asJSON: options.json) {
                    """
                    \(c.name)
                      ID           \(c.id)
                      user ID      \(c.userID)
                      fingerprint  \(c.fingerprint)
                      verified     \(c.verified ? "yes" : "no")
                      status       \(Output.connection(c.connection))
                      added        \(Output.time(c.addedAt))
                    """
                }
            }
        }
    }

    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Mark a contact verified after comparing fingerprints in person.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "ID, name, user ID or fingerprint prefix.") var contact: String

        func run() throws {
            try Output.run(json: options.json) {
                let node = try options.unlockedNode()
                let c = try node.findContact(contact)
                try node.verifyContact(c.id)
                let updated = try node.contact(c.id)
                Output.emit(updated.json, asJSON: options.json) { "\(updated.name) is verified" }
            }
        }
    }

    struct Rename: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Rename a contact.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "ID, name, user ID or fingerprint prefix.") var contact: String
        @Argument(help: "The new name, 2 to 50 characters.") var name: String

        func run() throws {
            try Output.run(json: options.json) {
                let node = try options.unlockedNode()
                let renamed = try node.renameContact(try node.findContact(contact).id, to: name)
                Output.emit(renamed.json, asJSON: options.json) { "Renamed to \(renamed.name)" }
            }
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a contact; their messages stay unless --with-messages.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "ID, name, user ID or fingerprint prefix.") var contact: String
        @Flag(help: "Delete the conversation too.") var withMessages = false

        func run() throws {
            try Output.run(json: options.json) {
                let node = try options.unlockedNode()
                let c = try node.findContact(contact)
                try node.deleteContact(c.id, deleteMessages: withMessages)
                Output.emit(.object([("deleted", .int(c.id)), ("messages_deleted", .bool(withMessages))]), asJSON: options.json) {
                    "Deleted \(c.name)" + (withMessages ? " and the conversation" : "; the conversation is kept")
                }
            }
        }
    }
}
