import YaOKSupport
import YaOKWire
import YaOKCrypto

/// A contact as the app shows it (US-011): name, fingerprint, verification, connection.
public struct Contact: Sendable, Equatable {
    /// Stable within one node; also the id of the conversation with this person.
    public let id: Int64
    public let name: String
    public let publicIdentity: PublicIdentity
    /// Set after an out-of-band fingerprint comparison (US-031).
    public let verified: Bool
    /// Wall-clock milliseconds since 1970.
    public let addedAt: Int64
    public let connection: ConnectionStatus

    public var userID: String { publicIdentity.userID }
    public var fingerprint: Fingerprint { publicIdentity.fingerprint }

    package init(id: Int64, name: String, publicIdentity: PublicIdentity, verified: Bool, addedAt: Int64,
                 connection: ConnectionStatus) {
        self.id = id
        self.name = name
        self.publicIdentity = publicIdentity
        self.verified = verified
        self.addedAt = addedAt
        self.connection = connection
    }
}

/// "Online (Bluetooth)", "Last seen …" or "Never connected" (AC-011-03).
public enum ConnectionStatus: Sendable, Equatable {
    case online(transport: String)
    /// Wall-clock milliseconds since 1970.
    case lastSeen(Int64)
    case neverConnected
}

/// What a scanned card would add, before anything is stored (US-010 preview).
public struct ContactPreview: Sendable, Equatable {
    public let name: String
    public let publicIdentity: PublicIdentity
    /// The id of the existing contact with these keys, if this person is already a contact.
    public let existingContactID: Int64?

    public var userID: String { publicIdentity.userID }
    public var fingerprint: Fingerprint { publicIdentity.fingerprint }
    /// The name's letters come from more than one script ("Аlice" with a Cyrillic А): an
    /// app should warn before the name is trusted. See `DisplayName.mixesScripts`.
    public var mixedScripts: Bool { DisplayName.mixesScripts(name) }

    package init(name: String, publicIdentity: PublicIdentity, existingContactID: Int64?) {
        self.name = name
        self.publicIdentity = publicIdentity
        self.existingContactID = existingContactID
    }
}
