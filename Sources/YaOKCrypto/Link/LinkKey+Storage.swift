import YaOKSupport

extension LinkKey {
    /// A copy of the secret for the node to seal into its store (under the database key);
    /// the caller wipes it after use.
    package var secretBytes: [UInt8] {
        secret.withUnsafeBytes { Array($0) }
    }
}
