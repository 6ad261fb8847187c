import Glibc
internal import COpenSSL
import YaOKSupport

extension TLSContext {
    /// Server, development mode: DIR/relay-cert.pem and DIR/relay-key.pem, made the first
    /// time (a P-256 key, a self-signed certificate for `commonName`, IP:127.0.0.1 and
    /// DNS:localhost, valid about ten years) and reused afterwards, so the pin stays the
    /// same across restarts on the same data directory.
    ///
    /// The key file is created 0600 with O_EXCL, never readable by others even briefly, and
    /// an existing key readable by others is refused (it may have been copied). The key is
    /// written under a temporary name and linked into place, so a crash or a second relay
    /// starting at the same moment never leaves a half-written key: one key wins and both
    /// use it. The pin depends only on the key, so a lost certificate is simply made again.
    public static func selfSigned(directory: String, commonName: String = "yaok-relay") throws -> TLSContext {
        guard !commonName.isEmpty, commonName.utf8.count <= 64 else {
            throw YaOKError(.invalidArgument, "A certificate's common name is 1 to 64 bytes long")
        }
        defer { OpenSSLError.clear() }
        let files = SelfSignedFiles(directory: directory)
        try files.makeDirectory()
        if !SelfSignedFiles.exists(files.key) {
            if SelfSignedFiles.exists(files.certificate) {
                throw YaOKError(.tlsFailed, "\(files.certificate) exists but its key \(files.key) does not: "
                    + "remove the certificate to make a new key (clients will need the new pin)")
            }
            try files.createKeyAndCertificate(commonName: commonName)
        } else {
            try files.requirePrivateKey()
            if !SelfSignedFiles.exists(files.certificate) {
                try files.createCertificate(commonName: commonName)
            }
        }
        return try server(certificateFile: files.certificate, keyFile: files.key)
    }
}
