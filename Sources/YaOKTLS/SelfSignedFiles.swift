import Glibc
internal import COpenSSL
import YaOKSupport

/// The two files of `TLSContext.selfSigned` and how they are written.
struct SelfSignedFiles {
    let directory: String
    let certificate: String
    let key: String

    init(directory: String) {
        self.directory = directory
        certificate = directory + "/relay-cert.pem"
        key = directory + "/relay-key.pem"
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    func makeDirectory() throws {
        if mkdir(directory, 0o700) == 0 || errno == EEXIST { return }
        throw YaOKError(.tlsFailed, "Cannot create the directory \(directory): \(String(cString: strerror(errno)))")
    }

    func requirePrivateKey() throws {
        var info = stat()
        guard stat(key, &info) == 0 else {
            throw YaOKError(.tlsFailed, "Cannot read the TLS private key file \(key): \(String(cString: strerror(errno)))")
        }
        let mode = info.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw YaOKError(.tlsFailed, "The TLS private key \(key) can be read by other users (mode "
                + "\(String(mode, radix: 8))): remove both relay-key.pem and relay-cert.pem to make a new key, or chmod 600 it")
        }
    }

    /// Writes a new key, unless another process links one into place first, then the certificate.
    func createKeyAndCertificate(commonName: String) throws {
        let newKey = try SelfSignedCertificate.makeKey()
        defer { EVP_PKEY_free(newKey) }
        let temporary = key + ".tmp-\(getpid())"
        try Self.writeNew(temporary, mode: 0o600, what: "TLS private key") { bio in
            PEM_write_bio_PrivateKey(bio, newKey, nil, nil, 0, nil, nil) == 1
        }
        defer { unlink(temporary) }
        // link(2) fails rather than replace an existing key (rename would replace it).
        if link(temporary, key) != 0 {
            let code = errno
            guard code == EEXIST else {
                throw YaOKError(.tlsFailed, "Cannot create the TLS private key \(key): \(String(cString: strerror(code)))")
            }
            // Another process made the key a moment ago: use it.
        }
        Self.syncDirectory(directory)
        if !Self.exists(certificate) {
            try createCertificate(commonName: commonName)
        }
    }

    /// A certificate for the key on disk, written under a temporary name and renamed.
    func createCertificate(commonName: String) throws {
        let storedKey = try loadKey()
        defer { EVP_PKEY_free(storedKey) }
        let newCertificate = try SelfSignedCertificate.make(key: storedKey, commonName: commonName)
        defer { X509_free(newCertificate) }
        let temporary = certificate + ".tmp-\(getpid())"
        try Self.writeNew(temporary, mode: 0o644, what: "TLS certificate") { bio in
            PEM_write_bio_X509(bio, newCertificate) == 1
        }
        defer { unlink(temporary) }
        guard rename(temporary, certificate) == 0 else {
            throw YaOKError(.tlsFailed, "Cannot create the TLS certificate \(certificate): \(String(cString: strerror(errno)))")
        }
        Self.syncDirectory(directory)
    }

    private func loadKey() throws -> OpaquePointer {
        OpenSSLError.clear()
        guard let file = BIO_new_file(key, "r") else {
            throw OpenSSLError.error(.tlsFailed, "Cannot open the TLS private key file \(key)")
        }
        defer { BIO_free(file) }
        guard let loaded = PEM_read_bio_PrivateKey(file, nil, nil, nil) else {
            throw OpenSSLError.error(.tlsFailed, "Cannot load the TLS private key from \(key)")
        }
        return loaded
    }

    /// Creates `path` (O_EXCL, so never someone else's file; `mode` from the first byte,
    /// umask only narrowing it), writes it through a BIO, and syncs it to disk.
    private static func writeNew(_ path: String, mode: mode_t, what: String, _ write: (OpaquePointer) -> Bool) throws {
        func open() -> Int32 {
            Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode)
        }
        var fd = open()
        if fd < 0 && errno == EEXIST {
            // Left by an earlier run of this process id that died before cleaning up.
            unlink(path)
            fd = open()
        }
        guard fd >= 0 else {
            throw YaOKError(.tlsFailed, "Cannot create the \(what) file \(path): \(String(cString: strerror(errno)))")
        }
        var ok = fchmod(fd, mode) == 0
        OpenSSLError.clear()
        if ok, let bio = BIO_new_fd(fd, BIO_NOCLOSE) {
            ok = write(bio)
            BIO_free(bio)
        } else {
            ok = false
        }
        ok = ok && fsync(fd) == 0
        Glibc.close(fd)
        guard ok else {
            unlink(path)
            throw OpenSSLError.error(.tlsFailed, "Cannot write the \(what) file \(path)",
                                     fallback: String(cString: strerror(errno)))
        }
    }

    /// So that the new name survives a power cut along with the contents.
    private static func syncDirectory(_ path: String) {
        let fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        Glibc.close(fd)
    }
}
