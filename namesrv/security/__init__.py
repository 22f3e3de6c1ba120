"""Who may ask what: request classes, the ACL 1.0 signature check, broker allow-lists, and their wiring.

Java's NameServer has no authorization at all (any peer that reaches 9876 can rewrite its
configuration or wipe a broker's write permission); the broker's ``PlainAccessValidator``
is the model for the signature check, so real clients configured with an AccessKey and a
SecretKey (``AclClientRPCHook``) are accepted unchanged.
"""
