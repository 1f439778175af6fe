"""Transactions are not implemented yet: every transactional API gets one clear, fatal error code.

TRANSACTIONAL_ID_AUTHORIZATION_FAILED is the code InitProducerId already answers for a transactional
id, so a client fails the same way whichever transactional request it reaches first (clients treat it
as fatal instead of retrying), and the connection stays open for everything else.
"""

from __future__ import annotations

import logging

from kio.schema.errors import ErrorCode

from broker.handlers.context import Request

REFUSED = ErrorCode.transactional_id_authorization_failed
MESSAGE = "transactions are not supported by this broker yet; produce without transactional.id"

log = logging.getLogger("broker.transactions")


def refuse(request: Request, transactional_id: str | None) -> ErrorCode:
    log.warning("refused %s from client %r (transactional.id %r): %s", type(request.body).__name__,
                request.header.client_id, transactional_id, MESSAGE)
    return REFUSED
