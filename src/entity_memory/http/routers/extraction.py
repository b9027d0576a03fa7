"""Session extraction: a conversation in, a job recorded in the user's writer, its entities
upserted off the request path (service/jobs.py); a caller may wait for the result within a
bound (`?wait=true`, `?wait=N` or `Prefer: wait=N`)."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from entity_memory.domain.keys import validate_id
from entity_memory.extraction.base import Message
from entity_memory.http.body import openapi_body, parse, read_json
from entity_memory.http.deps import UserId, WriterDep
from entity_memory.http.errors import ApiError, error_response, pydantic_details
from entity_memory.http.schemas import ExtractBody, ExtractResponse
from entity_memory.http.transcript import transcript_to_messages
from entity_memory.service import writes
from entity_memory.service.jobs import RUNNABLE, JobList, JobView
from entity_memory.service.writes import ExtractCall, JobCall, JobsCall

#: Seconds `?wait=true` waits for a job before answering 202 with its status.
DEFAULT_JOB_WAIT_S = 60.0
#: The longest wait a caller may ask for (a longer one is cut to this).
MAX_JOB_WAIT_S = 300.0
#: How often a waiting request asks the writer how its job is doing (first, then at most).
JOB_POLL_FIRST_S = 0.1
JOB_POLL_MAX_S = 1.0

router = APIRouter(tags=["extraction"])


@router.post(
    "/v1/users/{user_id}/sessions/{session_id}/extract",
    status_code=202,
    responses={
        200: {"model": ExtractResponse, "description": "done within the wait asked for"},
        202: {"model": JobView, "description": "the job, queued or running"},
    },
    openapi_extra=openapi_body(ExtractBody, text=True),
)
async def extract(
    user_id: UserId,
    session_id: str,
    request: Request,
    writer: WriterDep,
) -> JSONResponse:
    """Queue the extraction of a session and answer at once (202, the job and its status
    URL), or within the wait asked for with the result (200). Re-sending a session finds its
    job and never runs it twice."""
    validate_id(session_id, "session")
    if request.headers.get("content-type", "").startswith("text/plain"):
        raw: Any = {"transcript": (await request.body()).decode("utf-8", errors="replace")}
    else:
        raw = await read_json(request)
        if isinstance(raw, str):
            raw = {"transcript": raw}
    body = parse(ExtractBody, raw, "invalid_request", "request does not validate")
    messages = list(body.messages or [])
    if body.transcript:
        messages += _transcript_messages(body.transcript)
    call = ExtractCall(
        user_id=user_id, session_id=session_id, messages=messages, extractor=body.extractor
    )
    wait = _wait_asked(request)  # before the job is recorded: a bad value changes nothing
    job = await writer.run(writes.enqueue_extract, call)
    delay = JOB_POLL_FIRST_S
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    while job.state in RUNNABLE and loop.time() < deadline:
        await asyncio.sleep(min(delay, max(0.0, deadline - loop.time())))
        delay = min(delay * 2, JOB_POLL_MAX_S)
        job = await writer.run(writes.job_status, JobCall(user_id=user_id, job_id=job.id))
    return _answer(user_id, job)


@router.get("/v1/users/{user_id}/jobs/{job_id}", responses={200: {"model": JobView}})
async def job_status(user_id: UserId, job_id: str, writer: WriterDep) -> JSONResponse:
    """One extraction job: its state, progress, and once done its result."""
    validate_id(job_id, "job")
    job = await writer.run(writes.job_status, JobCall(user_id=user_id, job_id=job_id))
    return JSONResponse(job.model_dump(mode="json", by_alias=True))


@router.get("/v1/users/{user_id}/jobs", responses={200: {"model": JobList}})
async def list_jobs(user_id: UserId, writer: WriterDep) -> JSONResponse:
    """The user's extraction jobs, newest first (results left out: GET a job for its own)."""
    jobs = (await writer.run(writes.list_jobs, JobsCall(user_id=user_id))).jobs
    return JSONResponse({"jobs": [_summary(j) for j in jobs]})


def _summary(job: JobView) -> dict[str, Any]:
    return job.model_dump(mode="json", by_alias=True, exclude={"result"})


def _answer(user_id: str, job: JobView) -> JSONResponse:
    summary = _summary(job)
    if job.state == "done" and job.result is not None:
        return JSONResponse({**job.result, "job": summary}, status_code=200)
    if job.state == "failed" and job.error is not None:
        e = job.error
        return error_response(e.status, e.code, e.message, {"job": summary})
    url = f"/v1/users/{user_id}/jobs/{job.id}"
    body = {"job": summary, "statusUrl": url}
    return JSONResponse(body, status_code=202, headers={"Location": url, "Retry-After": "1"})


def _wait_asked(request: Request) -> float:
    """Seconds the caller will wait for the result: `?wait=true|false|N`, else the
    `Prefer: wait=N` header (RFC 7240); 0 by default; at most MAX_JOB_WAIT_S."""
    asked = request.query_params.get("wait")
    if asked is None:
        for part in request.headers.get("prefer", "").split(","):
            name, _, value = part.strip().partition("=")
            if name.strip().lower() == "wait":
                asked = value.strip()
    if asked is None or asked.lower() in ("", "false", "0"):
        return 0.0
    if asked.lower() == "true":
        return DEFAULT_JOB_WAIT_S
    try:
        seconds = float(asked)
    except ValueError:
        raise ApiError(400, "invalid_wait", "wait is true, false or seconds") from None
    if not 0 <= seconds < float("inf"):
        raise ApiError(400, "invalid_wait", "wait is true, false or seconds")
    return min(seconds, MAX_JOB_WAIT_S)


def _transcript_messages(transcript: str) -> list[Message]:
    try:
        return transcript_to_messages(transcript)
    except ValidationError as exc:
        details = pydantic_details(exc)
        raise ApiError(422, "invalid_request", "transcript does not validate", details) from exc
