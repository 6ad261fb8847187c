enum CryptoBench { static func run() throws { print("  (to be written)") } }
