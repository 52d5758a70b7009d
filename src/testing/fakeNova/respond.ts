/**
 * Replies of the fake and Nova's error envelope (`nova/api/openstack/wsgi.py` `Fault`:
 * `{"<name>": {"code": n, "message": "..."}}`, Content-Type `application/json; charset=UTF-8`).
 *
 * @module
 */

/** A reply before it is written: a JSON-able body (sent Python-style) or a raw string. */
export interface Reply {
  status: number;
  /** Object: serialised like Python's `json.dumps`. String: sent as is. Undefined: no body. */
  body?: unknown;
  headers?: Record<string, string>;
  /** The server this reply is about (recorded in {@link RecordedRequest.serverId}). */
  serverId?: string;
}

/** Nova's fault names by status (`wsgi.py` `Fault._fault_names`); anything else is `computeFault`. */
const FAULT_NAMES: Record<number, string> = {
  400: 'badRequest',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'itemNotFound',
  405: 'badMethod',
  409: 'conflictingRequest',
  413: 'overLimit',
  415: 'badMediaType',
  429: 'overLimit',
  501: 'notImplemented',
  503: 'serviceUnavailable',
};

/** The fault key Nova uses for `status`. */
export function faultName(status: number): string {
  return FAULT_NAMES[status] ?? 'computeFault';
}

/** A Nova fault reply: `{"<name>": {"code": status, "message": message}}`. */
export function fault(status: number, message: string, serverId?: string): Reply {
  return { status, body: { [faultName(status)]: { code: status, message } }, serverId };
}

/** Default messages when a fault is injected without a body (webob's explanations). */
const DEFAULT_MESSAGES: Record<number, string> = {
  400: 'The server could not comply with the request since it is either malformed or otherwise incorrect.',
  401: 'This server could not verify that you are authorized to access the document you requested.',
  403: 'Access was denied to this resource.',
  404: 'The resource could not be found.',
  409: 'There was a conflict when trying to complete your request.',
  413: 'The body of your request was too large for this server.',
  429: 'This request was rate-limited.',
  500: 'Unexpected API Error. Please report this at http://bugs.launchpad.net/nova/ and attach the Nova API log if possible.',
  502: 'Bad gateway.',
  503: 'Service Unavailable',
  504: 'The gateway has timed out.',
};

/** Default message of an injected error status. */
export function defaultMessage(status: number): string {
  return DEFAULT_MESSAGES[status] ?? 'An unknown error has occurred. Please try your request again.';
}
