"""The Bluetooth LE transport through the binding. This machine's kernel has no Bluetooth
(scripts/test-ble proves the transport in a VM), so what is checked here is the path every
app meets where Bluetooth cannot be used: a clear reason, and the node carrying on."""

import pytest

import yaok


def test_ble_is_registered_and_fails_clearly_where_bluetooth_is_absent(node):
    with pytest.raises(yaok.InvalidArgument, match="not a name like hci0"):
        node.add_ble("bt0")
    node.add_ble()
    with pytest.raises(yaok.InvalidArgument):
        node.add_ble()
    try:
        node.set_transport_enabled("ble", True)
    except yaok.LinkFailed as error:
        assert str(error).startswith("Bluetooth unavailable: ")
    node.set_transport_enabled("ble", False)
    ble = [t for t in node.diagnostics()["transports"] if t["name"] == "ble"]
    assert len(ble) == 1 and ble[0]["state"] == "disabled"
    assert ble[0]["details"]["status"] == "Bluetooth: Disabled"
