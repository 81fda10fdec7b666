"""grpc's traceback for a stream status that had no client left to go to is one debug line."""

from __future__ import annotations

import logging
import sys

from nodeagent import logs


class ExecuteBatchError(Exception):
    pass


def _record(text: str) -> logging.LogRecord:
    try:
        raise ExecuteBatchError(text)
    except ExecuteBatchError:
        info = sys.exc_info()
    return logging.LogRecord("grpc._cython.cygrpc", logging.ERROR, __file__, 1,
                             "ExecuteBatchError raised in core by servicer method [/v1.DRAResourceHealth/"
                             "NodeWatchResources]", None, info)


def test_a_status_to_a_gone_client_is_not_an_error() -> None:
    record = _record('Failed "execute_batch": (<grpc._cython.cygrpc.SendStatusFromServerOperation object>,)')
    shown = logs._StatusToAGoneClient().filter(record)
    assert (record.levelno, record.exc_info) == (logging.DEBUG, None)
    assert shown == logging.getLogger().isEnabledFor(logging.DEBUG)


def test_other_batch_errors_keep_their_traceback() -> None:
    record = _record('Failed "execute_batch": (<grpc._cython.cygrpc.SendMessageOperation object>,)')
    assert logs._StatusToAGoneClient().filter(record) is True
    assert record.levelno == logging.ERROR and record.exc_info is not None
