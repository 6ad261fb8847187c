import CYaOK
import Foundation
import Testing
import YaOKFFI

/// Each @_cdecl entry point, compiled against its declaration in include/yaok.h: `f` takes
/// the exact type Swift imports for the C declaration, and assigning the Swift entry point
/// to it only type-checks when the two agree, so a parameter or return type that drifts
/// from the header fails the build of this test target (a C caller would otherwise pass
/// arguments the library misreads). (A generic `same<T>(_: T, _: T)` would not do: both
/// sides convert to `Any`.)
@Suite struct HeaderSignatureTests {
    @Test func everyEntryPointHasTheHeadersType() {
        do { var f = CYaOK.yaok_abi_version; f = YaOKFFI.yaok_abi_version; _ = f }
        do { var f = CYaOK.yaok_bytes_free; f = YaOKFFI.yaok_bytes_free; _ = f }
        do { var f = CYaOK.yaok_card_decode; f = YaOKFFI.yaok_card_decode; _ = f }
        do { var f = CYaOK.yaok_card_fingerprint; f = YaOKFFI.yaok_card_fingerprint; _ = f }
        do { var f = CYaOK.yaok_card_free; f = YaOKFFI.yaok_card_free; _ = f }
        do { var f = CYaOK.yaok_card_name; f = YaOKFFI.yaok_card_name; _ = f }
        do { var f = CYaOK.yaok_card_public_keys; f = YaOKFFI.yaok_card_public_keys; _ = f }
        do { var f = CYaOK.yaok_card_text; f = YaOKFFI.yaok_card_text; _ = f }
        do { var f = CYaOK.yaok_card_user_id; f = YaOKFFI.yaok_card_user_id; _ = f }
        do { var f = CYaOK.yaok_contact_add; f = YaOKFFI.yaok_contact_add; _ = f }
        do { var f = CYaOK.yaok_contact_delete; f = YaOKFFI.yaok_contact_delete; _ = f }
        do { var f = CYaOK.yaok_contact_find; f = YaOKFFI.yaok_contact_find; _ = f }
        do { var f = CYaOK.yaok_contact_keys; f = YaOKFFI.yaok_contact_keys; _ = f }
        do { var f = CYaOK.yaok_contact_list; f = YaOKFFI.yaok_contact_list; _ = f }
        do { var f = CYaOK.yaok_contact_preview; f = YaOKFFI.yaok_contact_preview; _ = f }
        do { var f = CYaOK.yaok_contact_rename; f = YaOKFFI.yaok_contact_rename; _ = f }
        do { var f = CYaOK.yaok_contact_show; f = YaOKFFI.yaok_contact_show; _ = f }
        do { var f = CYaOK.yaok_contact_verify; f = YaOKFFI.yaok_contact_verify; _ = f }
        do { var f = CYaOK.yaok_envelope_open; f = YaOKFFI.yaok_envelope_open; _ = f }
        do { var f = CYaOK.yaok_envelope_seal; f = YaOKFFI.yaok_envelope_seal; _ = f }
        do { var f = CYaOK.yaok_fragment_split; f = YaOKFFI.yaok_fragment_split; _ = f }
        do { var f = CYaOK.yaok_frame_encode; f = YaOKFFI.yaok_frame_encode; _ = f }
        do { var f = CYaOK.yaok_identity_card; f = YaOKFFI.yaok_identity_card; _ = f }
        do { var f = CYaOK.yaok_identity_fingerprint; f = YaOKFFI.yaok_identity_fingerprint; _ = f }
        do { var f = CYaOK.yaok_identity_free; f = YaOKFFI.yaok_identity_free; _ = f }
        do { var f = CYaOK.yaok_identity_name; f = YaOKFFI.yaok_identity_name; _ = f }
        do { var f = CYaOK.yaok_identity_new; f = YaOKFFI.yaok_identity_new; _ = f }
        do { var f = CYaOK.yaok_identity_restore; f = YaOKFFI.yaok_identity_restore; _ = f }
        do { var f = CYaOK.yaok_identity_user_id; f = YaOKFFI.yaok_identity_user_id; _ = f }
        do { var f = CYaOK.yaok_last_error_message; f = YaOKFFI.yaok_last_error_message; _ = f }
        do { var f = CYaOK.yaok_link_close; f = YaOKFFI.yaok_link_close; _ = f }
        do { var f = CYaOK.yaok_link_open; f = YaOKFFI.yaok_link_open; _ = f }
        do { var f = CYaOK.yaok_link_receive; f = YaOKFFI.yaok_link_receive; _ = f }
        do { var f = CYaOK.yaok_message_get; f = YaOKFFI.yaok_message_get; _ = f }
        do { var f = CYaOK.yaok_message_history; f = YaOKFFI.yaok_message_history; _ = f }
        do { var f = CYaOK.yaok_message_mark_read; f = YaOKFFI.yaok_message_mark_read; _ = f }
        do { var f = CYaOK.yaok_message_retry; f = YaOKFFI.yaok_message_retry; _ = f }
        do { var f = CYaOK.yaok_message_send; f = YaOKFFI.yaok_message_send; _ = f }
        do { var f = CYaOK.yaok_node_diagnostics; f = YaOKFFI.yaok_node_diagnostics; _ = f }
        do { var f = CYaOK.yaok_node_free; f = YaOKFFI.yaok_node_free; _ = f }
        do { var f = CYaOK.yaok_node_identity; f = YaOKFFI.yaok_node_identity; _ = f }
        do { var f = CYaOK.yaok_node_lock; f = YaOKFFI.yaok_node_lock; _ = f }
        do { var f = CYaOK.yaok_node_open; f = YaOKFFI.yaok_node_open; _ = f }
        do { var f = CYaOK.yaok_node_profile; f = YaOKFFI.yaok_node_profile; _ = f }
        do { var f = CYaOK.yaok_node_register_platform_key; f = YaOKFFI.yaok_node_register_platform_key; _ = f }
        do { var f = CYaOK.yaok_node_remove_platform_key; f = YaOKFFI.yaok_node_remove_platform_key; _ = f }
        do { var f = CYaOK.yaok_node_reset; f = YaOKFFI.yaok_node_reset; _ = f }
        do { var f = CYaOK.yaok_node_set_auto_lock; f = YaOKFFI.yaok_node_set_auto_lock; _ = f }
        do { var f = CYaOK.yaok_node_set_event_callback; f = YaOKFFI.yaok_node_set_event_callback; _ = f }
        do { var f = CYaOK.yaok_node_set_device_secret; f = YaOKFFI.yaok_node_set_device_secret; _ = f }
        do { var f = CYaOK.yaok_node_setup; f = YaOKFFI.yaok_node_setup; _ = f }
        do { var f = CYaOK.yaok_node_setup_v2; f = YaOKFFI.yaok_node_setup_v2; _ = f }
        do { var f = CYaOK.yaok_node_status; f = YaOKFFI.yaok_node_status; _ = f }
        do { var f = CYaOK.yaok_node_unlock; f = YaOKFFI.yaok_node_unlock; _ = f }
        do { var f = CYaOK.yaok_node_unlock_platform_key; f = YaOKFFI.yaok_node_unlock_platform_key; _ = f }
        do { var f = CYaOK.yaok_outbox; f = YaOKFFI.yaok_outbox; _ = f }
        do { var f = CYaOK.yaok_packet_decode; f = YaOKFFI.yaok_packet_decode; _ = f }
        do { var f = CYaOK.yaok_secret_check; f = YaOKFFI.yaok_secret_check; _ = f }
        do { var f = CYaOK.yaok_security_events; f = YaOKFFI.yaok_security_events; _ = f }
        do { var f = CYaOK.yaok_status_str; f = YaOKFFI.yaok_status_str; _ = f }
        do { var f = CYaOK.yaok_string_free; f = YaOKFFI.yaok_string_free; _ = f }
        do { var f = CYaOK.yaok_transport_set_enabled; f = YaOKFFI.yaok_transport_set_enabled; _ = f }
        do { var f = CYaOK.yaok_transport_lan_add; f = YaOKFFI.yaok_transport_lan_add; _ = f }
        do { var f = CYaOK.yaok_transport_relay_add; f = YaOKFFI.yaok_transport_relay_add; _ = f }
        do { var f = CYaOK.yaok_transport_ble_add; f = YaOKFFI.yaok_transport_ble_add; _ = f }
        do { var f = CYaOK.yaok_link_peer; f = YaOKFFI.yaok_link_peer; _ = f }
        do { var f = CYaOK.yaok_version_string; f = YaOKFFI.yaok_version_string; _ = f }
        // Typed access (no JSON).
        do { var f = CYaOK.yaok_event_contact_id; f = YaOKFFI.yaok_event_contact_id; _ = f }
        do { var f = CYaOK.yaok_event_message_id; f = YaOKFFI.yaok_event_message_id; _ = f }
        do { var f = CYaOK.yaok_event_message_status; f = YaOKFFI.yaok_event_message_status; _ = f }
        do { var f = CYaOK.yaok_event_message; f = YaOKFFI.yaok_event_message; _ = f }
        do { var f = CYaOK.yaok_event_transport_name; f = YaOKFFI.yaok_event_transport_name; _ = f }
        do { var f = CYaOK.yaok_event_transport_state; f = YaOKFFI.yaok_event_transport_state; _ = f }
        do { var f = CYaOK.yaok_event_text; f = YaOKFFI.yaok_event_text; _ = f }
        do { var f = CYaOK.yaok_message_send_v2; f = YaOKFFI.yaok_message_send_v2; _ = f }
        do { var f = CYaOK.yaok_message_lookup; f = YaOKFFI.yaok_message_lookup; _ = f }
        do { var f = CYaOK.yaok_message_free; f = YaOKFFI.yaok_message_free; _ = f }
        do { var f = CYaOK.yaok_message_id; f = YaOKFFI.yaok_message_id; _ = f }
        do { var f = CYaOK.yaok_message_contact_id; f = YaOKFFI.yaok_message_contact_id; _ = f }
        do { var f = CYaOK.yaok_message_direction; f = YaOKFFI.yaok_message_direction; _ = f }
        do { var f = CYaOK.yaok_message_status; f = YaOKFFI.yaok_message_status; _ = f }
        do { var f = CYaOK.yaok_message_text; f = YaOKFFI.yaok_message_text; _ = f }
        do { var f = CYaOK.yaok_message_time; f = YaOKFFI.yaok_message_time; _ = f }
        do { var f = CYaOK.yaok_message_repaired; f = YaOKFFI.yaok_message_repaired; _ = f }
        do { var f = CYaOK.yaok_contact_add_v2; f = YaOKFFI.yaok_contact_add_v2; _ = f }
        do { var f = CYaOK.yaok_contact_get; f = YaOKFFI.yaok_contact_get; _ = f }
        do { var f = CYaOK.yaok_contact_ids; f = YaOKFFI.yaok_contact_ids; _ = f }
        do { var f = CYaOK.yaok_contact_free; f = YaOKFFI.yaok_contact_free; _ = f }
        do { var f = CYaOK.yaok_contact_id; f = YaOKFFI.yaok_contact_id; _ = f }
        do { var f = CYaOK.yaok_contact_name; f = YaOKFFI.yaok_contact_name; _ = f }
        do { var f = CYaOK.yaok_contact_user_id; f = YaOKFFI.yaok_contact_user_id; _ = f }
        do { var f = CYaOK.yaok_contact_fingerprint; f = YaOKFFI.yaok_contact_fingerprint; _ = f }
        do { var f = CYaOK.yaok_contact_verified; f = YaOKFFI.yaok_contact_verified; _ = f }
        do { var f = CYaOK.yaok_contact_connection; f = YaOKFFI.yaok_contact_connection; _ = f }
        do { var f = CYaOK.yaok_diagnostics_new; f = YaOKFFI.yaok_diagnostics_new; _ = f }
        do { var f = CYaOK.yaok_diagnostics_free; f = YaOKFFI.yaok_diagnostics_free; _ = f }
        do { var f = CYaOK.yaok_diagnostics_transport_count; f = YaOKFFI.yaok_diagnostics_transport_count; _ = f }
        do { var f = CYaOK.yaok_diagnostics_transport; f = YaOKFFI.yaok_diagnostics_transport; _ = f }
        do { var f = CYaOK.yaok_node_set_carry; f = YaOKFFI.yaok_node_set_carry; _ = f }
        do { var f = CYaOK.yaok_node_carry_status; f = YaOKFFI.yaok_node_carry_status; _ = f }
        do { var f = CYaOK.yaok_node_card; f = YaOKFFI.yaok_node_card; _ = f }
        do { var f = CYaOK.yaok_node_get_state; f = YaOKFFI.yaok_node_get_state; _ = f }
        do { var f = CYaOK.yaok_history_new; f = YaOKFFI.yaok_history_new; _ = f }
        do { var f = CYaOK.yaok_history_free; f = YaOKFFI.yaok_history_free; _ = f }
        do { var f = CYaOK.yaok_history_count; f = YaOKFFI.yaok_history_count; _ = f }
        do { var f = CYaOK.yaok_history_message; f = YaOKFFI.yaok_history_message; _ = f }
        do { var f = CYaOK.yaok_history_older_cursor; f = YaOKFFI.yaok_history_older_cursor; _ = f }
        do { var f = CYaOK.yaok_outbox_list_new; f = YaOKFFI.yaok_outbox_list_new; _ = f }
        do { var f = CYaOK.yaok_outbox_list_free; f = YaOKFFI.yaok_outbox_list_free; _ = f }
        do { var f = CYaOK.yaok_outbox_list_count; f = YaOKFFI.yaok_outbox_list_count; _ = f }
        do { var f = CYaOK.yaok_outbox_list_entry; f = YaOKFFI.yaok_outbox_list_entry; _ = f }
        do { var f = CYaOK.yaok_link_list_new; f = YaOKFFI.yaok_link_list_new; _ = f }
        do { var f = CYaOK.yaok_link_list_free; f = YaOKFFI.yaok_link_list_free; _ = f }
        do { var f = CYaOK.yaok_link_list_count; f = YaOKFFI.yaok_link_list_count; _ = f }
        do { var f = CYaOK.yaok_link_list_get; f = YaOKFFI.yaok_link_list_get; _ = f }
        do { var f = CYaOK.yaok_link_open_stream; f = YaOKFFI.yaok_link_open_stream; _ = f }
        do { var f = CYaOK.yaok_link_id; f = YaOKFFI.yaok_link_id; _ = f }
        do { var f = CYaOK.yaok_event_link_id; f = YaOKFFI.yaok_event_link_id; _ = f }
        do { var f = CYaOK.yaok_event_link_peer; f = YaOKFFI.yaok_event_link_peer; _ = f }
        do { var f = CYaOK.yaok_message_unread; f = YaOKFFI.yaok_message_unread; _ = f }
    }

    /// The list above covers every function the header declares.
    @Test func theCheckCoversTheWholeHeader() throws {
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { root.deleteLastPathComponent() }
        let header = try String(contentsOf: root.appendingPathComponent("include/yaok.h"), encoding: .utf8)
        let regex = try NSRegularExpression(pattern: #"^(?!typedef)[a-z_0-9 \*]*\b(yaok_[a-z0-9_]+)\s*\("#, options: [.anchorsMatchLines])
        let range = NSRange(header.startIndex..., in: header)
        let declared = Set(regex.matches(in: header, range: range).compactMap {
            Range($0.range(at: 1), in: header).map { String(header[$0]) }
        })
        #expect(declared == Set(Self.checked))
    }

    static let checked = [
        "yaok_abi_version",
        "yaok_bytes_free",
        "yaok_card_decode",
        "yaok_card_fingerprint",
        "yaok_card_free",
        "yaok_card_name",
        "yaok_card_public_keys",
        "yaok_card_text",
        "yaok_card_user_id",
        "yaok_contact_add",
        "yaok_contact_delete",
        "yaok_contact_find",
        "yaok_contact_keys",
        "yaok_contact_list",
        "yaok_contact_preview",
        "yaok_contact_rename",
        "yaok_contact_show",
        "yaok_contact_verify",
        "yaok_envelope_open",
        "yaok_envelope_seal",
        "yaok_fragment_split",
        "yaok_frame_encode",
        "yaok_identity_card",
        "yaok_identity_fingerprint",
        "yaok_identity_free",
        "yaok_identity_name",
        "yaok_identity_new",
        "yaok_identity_restore",
        "yaok_identity_user_id",
        "yaok_last_error_message",
        "yaok_link_close",
        "yaok_link_open",
        "yaok_link_receive",
        "yaok_message_get",
        "yaok_message_history",
        "yaok_message_mark_read",
        "yaok_message_retry",
        "yaok_message_send",
        "yaok_node_diagnostics",
        "yaok_node_free",
        "yaok_node_identity",
        "yaok_node_lock",
        "yaok_node_open",
        "yaok_node_profile",
        "yaok_node_register_platform_key",
        "yaok_node_remove_platform_key",
        "yaok_node_reset",
        "yaok_node_set_auto_lock",
        "yaok_node_set_event_callback",
        "yaok_node_set_device_secret",
        "yaok_node_setup",
        "yaok_node_setup_v2",
        "yaok_node_status",
        "yaok_node_unlock",
        "yaok_node_unlock_platform_key",
        "yaok_outbox",
        "yaok_packet_decode",
        "yaok_secret_check",
        "yaok_security_events",
        "yaok_status_str",
        "yaok_string_free",
        "yaok_transport_set_enabled",
        "yaok_transport_lan_add",
        "yaok_transport_relay_add",
        "yaok_transport_ble_add",
        "yaok_link_peer",
        "yaok_version_string",
        "yaok_event_contact_id",
        "yaok_event_message_id",
        "yaok_event_message_status",
        "yaok_event_message",
        "yaok_event_transport_name",
        "yaok_event_transport_state",
        "yaok_event_text",
        "yaok_message_send_v2",
        "yaok_message_lookup",
        "yaok_message_free",
        "yaok_message_id",
        "yaok_message_contact_id",
        "yaok_message_direction",
        "yaok_message_status",
        "yaok_message_text",
        "yaok_message_time",
        "yaok_message_repaired",
        "yaok_contact_add_v2",
        "yaok_contact_get",
        "yaok_contact_ids",
        "yaok_contact_free",
        "yaok_contact_id",
        "yaok_contact_name",
        "yaok_contact_user_id",
        "yaok_contact_fingerprint",
        "yaok_contact_verified",
        "yaok_contact_connection",
        "yaok_diagnostics_new",
        "yaok_diagnostics_free",
        "yaok_diagnostics_transport_count",
        "yaok_diagnostics_transport",
        "yaok_node_set_carry",
        "yaok_node_carry_status",
        "yaok_node_card",
        "yaok_node_get_state",
        "yaok_history_new",
        "yaok_history_free",
        "yaok_history_count",
        "yaok_history_message",
        "yaok_history_older_cursor",
        "yaok_outbox_list_new",
        "yaok_outbox_list_free",
        "yaok_outbox_list_count",
        "yaok_outbox_list_entry",
        "yaok_link_list_new",
        "yaok_link_list_free",
        "yaok_link_list_count",
        "yaok_link_list_get",
        "yaok_link_open_stream",
        "yaok_link_id",
        "yaok_event_link_id",
        "yaok_event_link_peer",
        "yaok_message_unread",
    ]
}
