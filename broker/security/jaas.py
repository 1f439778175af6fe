"""The PLAIN users of a listener, from Kafka's JAAS option string.

Kafka's broker reads `listener.name.<listener>.plain.sasl.jaas.config`, e.g.
`org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";`: each
`user_NAME="PASSWORD"` option is one PLAIN user (PlainServerCallbackHandler).
"""

from __future__ import annotations

import re

from broker.config import ConfigError

_OPTION = re.compile(r'(\w[\w.-]*)\s*=\s*"((?:[^"\\]|\\.)*)"')
_HEAD = re.compile(r"^\s*[\w.$]+\s+(required|requisite|sufficient|optional)\b")


def plain_users(text: str) -> dict[str, str]:
    """{user: password} from a JAAS config; raises ConfigError when the text is not `Module flag k="v" ...;`."""
    if not text.strip():
        return {}
    head = _HEAD.match(text)
    if head is None or not text.rstrip().endswith(";"):
        raise ConfigError('expected a JAAS entry like org.apache.kafka.common.security.plain.PlainLoginModule'
                          ' required user_alice="alice-secret";')
    options = {key: value.replace('\\"', '"') for key, value in _OPTION.findall(text[head.end():])}
    return {key.removeprefix("user_"): value for key, value in options.items() if key.startswith("user_")}
