import Foundation
import Testing
@testable import yaok
import YaOK

/// `yaok card` asks no PIN when a `yaok run` serves the home (issue 21 §6): the card comes
/// from the running peer, which holds the node unlocked. Without one the PIN is still
/// needed (the name and keys are sealed while locked).
@Suite(.serialized) struct CardThroughRunTests {
    @Test func theCardComesFromTheRunningPeerWithoutThePIN() throws {
        let alice = CLI.temporary("card-run")
        #expect(try alice.run(["init", "--name", "Alice"]).status == 0)
        let direct = try #require((try alice.run(["card", "--json"]).json as? [String: Any])?["card"] as? String)
        let run = try RunningPeer(alice)
        // A wrong PIN in the environment: the card must not need one.
        let served = try alice.run(["card", "--json"], pin: "999999")
        #expect(served.status == 0, "\(served.stderr)")
        let json = try #require(served.json as? [String: Any])
        #expect(json["card"] as? String == direct)
        #expect(json["name"] as? String == "Alice")
        let text = try alice.run(["card", "--no-qr"], pin: "999999")
        #expect(text.status == 0 && text.stdout.contains(direct))
        #expect(run.stop() == 0)
        // Without a run, a wrong PIN is refused: the card is sealed.
        #expect(try alice.run(["card", "--json"], pin: "999999").status != 0)
    }
}
