"""Broker security: listeners with TLS and SASL, SCRAM credentials, ACL authorization.

Modules, one job each:
    listeners   `listeners` + `listener.security.protocol.map` -> ListenerSpec; the connection's listener
    tls         ssl.SSLContext from the `ssl.*` properties (PEM key stores and trust stores)
    session     per-connection state: listener, peer, principal, the SASL exchange in progress
    jaas        the `user_NAME="password"` options of a PLAIN `sasl.jaas.config`
    scram       SCRAM credentials (RFC 5802/7677) and their store
    sasl        SaslHandshake / SaslAuthenticate with PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
    acls        ACL bindings and filters, their store
    authorizer  Kafka's StandardAuthorizer decision rules
    access      which resources each request touches; answers for the denied ones
    admin       the Create/Describe/DeleteAcls and Alter/DescribeUserScramCredentials handlers
    layer       the one seam the connection layer (broker/server.py) calls
"""
