import YaOKWire

// The Bluetooth LE codecs (the advertisement, the mgmt packets, addresses) are pure and
// live in the wire target, where the fuzzer builds them (scripts/fuzz). These names let every
// file of the transport use them as before, whether or not it imports YaOKWire itself.
typealias BLEAddress = YaOKWire.BLEAddress
typealias BLEAdvert = YaOKWire.BLEAdvert
typealias Mgmt = YaOKWire.Mgmt
