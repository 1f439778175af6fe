"""CreateAcls (30), DescribeAcls (29) and DeleteAcls (31), after Kafka's AclControlManager: one result per
creation and per filter; without an authorizer every one answers SECURITY_DISABLED, as Kafka does."""

from __future__ import annotations

import datetime
import sys
from collections import defaultdict
from typing import Any

from kio.schema.errors import ErrorCode

from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError
from broker.security.acls import AclBinding, AclFilter, AclStore, new_binding

_NO_THROTTLE = datetime.timedelta(0)
_DISABLED = "No Authorizer is configured on the broker (set authorizer.class.name)"


async def create(store: AclStore | None, api_key: int, version: int, body: Any) -> Any:
    cls = response_class(api_key, version)
    result_cls = _module(cls).AclCreationResult
    outcome: list[tuple[ErrorCode, str | None]] = []
    bindings: list[AclBinding] = []
    for item in body.creations:
        try:
            if store is None:
                raise KafkaApiError(ErrorCode.security_disabled, _DISABLED)
            bindings.append(new_binding(item.resource_type, item.resource_name, item.resource_pattern_type,
                                        item.principal, item.host, item.operation, item.permission_type))
            outcome.append((ErrorCode.none, None))
        except KafkaApiError as exc:
            outcome.append((exc.code, str(exc)))
    if store is not None and bindings:
        try:
            await store.add(bindings)
        except KafkaApiError as exc:  # not kept (a cluster without an active controller): each valid one fails
            outcome = [(exc.code, str(exc)) if code == ErrorCode.none else (code, message)
                       for code, message in outcome]
    results = tuple(result_cls(error_code=code, error_message=message) for code, message in outcome)
    return cls(throttle_time=_NO_THROTTLE, results=results)


async def describe(store: AclStore | None, api_key: int, version: int, body: Any) -> Any:
    cls = response_class(api_key, version)
    if store is None:
        return cls(throttle_time=_NO_THROTTLE, error_code=ErrorCode.security_disabled, error_message=_DISABLED,
                   resources=())
    acl_filter = AclFilter(body.resource_type_filter, body.resource_name_filter, body.pattern_type_filter,
                           body.principal_filter, body.host_filter, body.operation, body.permission_type)
    grouped: dict[tuple[int, str, int], list[AclBinding]] = defaultdict(list)
    for acl in store.all():
        if acl_filter.matches(acl):
            grouped[(acl.resource_type, acl.resource_name, acl.pattern_type)].append(acl)
    module = _module(cls)
    resources = tuple(
        module.DescribeAclsResource(
            resource_type=kind, resource_name=name, pattern_type=pattern,
            acls=tuple(module.AclDescription(principal=a.principal, host=a.host, operation=int(a.operation),
                                             permission_type=int(a.permission)) for a in acls))
        for (kind, name, pattern), acls in grouped.items()
    )
    return cls(throttle_time=_NO_THROTTLE, error_code=ErrorCode.none, error_message=None, resources=resources)


async def delete(store: AclStore | None, api_key: int, version: int, body: Any) -> Any:
    cls = response_class(api_key, version)
    module = _module(cls)
    results = []
    for item in body.filters:
        if store is None:
            results.append(module.DeleteAclsFilterResult(error_code=ErrorCode.security_disabled,
                                                         error_message=_DISABLED, matching_acls=()))
            continue
        try:
            removed = await store.remove(AclFilter(item.resource_type_filter, item.resource_name_filter,
                                                   item.pattern_type_filter, item.principal_filter,
                                                   item.host_filter, item.operation, item.permission_type))
        except KafkaApiError as exc:
            results.append(module.DeleteAclsFilterResult(error_code=exc.code, error_message=str(exc),
                                                         matching_acls=()))
            continue
        matching = tuple(
            module.DeleteAclsMatchingAcl(
                error_code=ErrorCode.none, error_message=None, resource_type=int(a.resource_type),
                resource_name=a.resource_name, pattern_type=int(a.pattern_type), principal=a.principal, host=a.host,
                operation=int(a.operation), permission_type=int(a.permission))
            for a in removed)
        results.append(module.DeleteAclsFilterResult(error_code=ErrorCode.none, error_message=None,
                                                     matching_acls=matching))
    return cls(throttle_time=_NO_THROTTLE, filter_results=tuple(results))


def _module(cls: Any) -> Any:
    return sys.modules[cls.__module__]
