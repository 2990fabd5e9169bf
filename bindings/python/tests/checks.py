"""The checks the multi-process workers make: each raises AssertionError with what went wrong, which fails
the rank (and psdp-run then fails the job)."""


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise AssertionError(what)


def expect_raises(exception: type[BaseException], call, *args, **kwargs) -> BaseException:
    """The exception call(*args, **kwargs) raised, which must be an `exception`."""
    try:
        call(*args, **kwargs)
    except exception as error:
        return error
    raise AssertionError(f"{getattr(call, '__name__', call)} did not raise {exception.__name__}")
