"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51), after Kafka's KIP-554 handlers:
one result per user, the first problem of a user answers for all its changes and none of them is applied."""

from __future__ import annotations

import datetime
from collections import defaultdict
from typing import Any

from kio.schema.errors import ErrorCode

from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError
from broker.security.scram import (
    MECHANISM_IDS,
    CredentialChange,
    CredentialStore,
    check_iterations,
    from_salted_password,
    mechanism_name,
)

_NO_THROTTLE = datetime.timedelta(0)


async def describe(store: CredentialStore, api_key: int, version: int, body: Any) -> Any:
    cls = response_class(api_key, version)
    module = _module(cls)
    users = store.users()
    wanted = [u.name for u in body.users] if body.users else sorted(users)
    results = []
    for name in dict.fromkeys(wanted):
        if wanted.count(name) > 1:
            code, message, infos = ErrorCode.duplicate_resource, f"user {name!r} is asked for twice", ()
        elif name not in users:
            code, message, infos = (ErrorCode.resource_not_found,
                                    f"Attempt to describe a user credential that does not exist: {name}", ())
        else:
            code, message = ErrorCode.none, None
            infos = tuple(module.CredentialInfo(mechanism=MECHANISM_IDS[mech], iterations=credential.iterations)
                          for mech, credential in sorted(users[name].items()))
        results.append(module.DescribeUserScramCredentialsResult(user=name, error_code=code, error_message=message,
                                                                  credential_infos=infos))
    return cls(throttle_time=_NO_THROTTLE, error_code=ErrorCode.none, error_message=None, results=tuple(results))


async def alter(store: CredentialStore, api_key: int, version: int, body: Any) -> Any:
    cls = response_class(api_key, version)
    changes: dict[str, list[Any]] = defaultdict(list)
    for change in (*body.deletions, *body.upsertions):
        changes[change.name].append(change)
    outcome: dict[str, tuple[ErrorCode, str | None]] = {}
    accepted: list[CredentialChange] = []
    for user, items in changes.items():
        try:
            _check(store, user, items)
        except KafkaApiError as exc:
            outcome[user] = (exc.code, str(exc))
            continue
        outcome[user] = (ErrorCode.none, None)
        for item in items:
            mechanism = mechanism_name(item.mechanism)
            credential = (from_salted_password(mechanism, item.salt, item.salted_password, item.iterations)
                          if hasattr(item, "salted_password") else None)
            accepted.append(CredentialChange(user, mechanism, credential))
    try:
        await store.apply(accepted)
    except KafkaApiError as exc:  # not kept (a cluster without an active controller): every accepted user fails
        for change in accepted:
            outcome[change.user] = (exc.code, str(exc))
    results = tuple(_module(cls).AlterUserScramCredentialsResult(user=user, error_code=code, error_message=message)
                    for user, (code, message) in outcome.items())
    return cls(throttle_time=_NO_THROTTLE, results=results)


def _check(store: CredentialStore, user: str, items: list[Any]) -> None:
    if not user:
        raise KafkaApiError(ErrorCode.unacceptable_credential, "Username must not be empty")
    seen = set()
    for item in items:
        mechanism = mechanism_name(item.mechanism)
        if mechanism in seen:
            raise KafkaApiError(ErrorCode.duplicate_resource,
                                f"A user credential cannot be altered twice in the same request: {user} {mechanism}")
        seen.add(mechanism)
        if hasattr(item, "salted_password"):
            check_iterations(item.iterations)
            if not item.salt or not item.salted_password:
                raise KafkaApiError(ErrorCode.unacceptable_credential, "salt and salted password must not be empty")
        elif store.get(user, mechanism) is None:
            raise KafkaApiError(ErrorCode.resource_not_found,
                                f"Attempt to delete a user credential that does not exist: {user} {mechanism}")


def _module(cls: Any) -> Any:
    import sys

    return sys.modules[cls.__module__]
