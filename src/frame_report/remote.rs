//! The frame's report over the Bevy Remote Protocol: the method [`REPORT_METHOD`] in the app,
//! and [`fetch_report`], the client the inspector and tests read another app's report with.
//!
//! The app serves it once it has Bevy's `RemotePlugin` and `RemoteHttpPlugin` (port 15702 by
//! default); on Android, `adb forward tcp:15702 tcp:15702` brings the phone's port to the
//! desktop.

use super::{TileFrameReport, TileFrameReportParam};
use bevy::prelude::*;
use bevy_remote::{BrpError, BrpResult, RemoteMethodSystemId, RemoteMethods, error_codes};
use serde_json::Value;
use std::{
    io::{Read, Write},
    net::{TcpStream, ToSocketAddrs},
    time::Duration,
};

/// The BRP method that answers the app's [`TileFrameReport`] as JSON. Parameters, all optional:
/// `{"camera": "<Name>"}` keeps the camera of that name only.
pub const REPORT_METHOD: &str = "tile_deferred.report";

/// The parameters of [`REPORT_METHOD`].
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TileReportParams {
    /// Keep only the camera with this `Name` (`"camera 4v0"`, its entity, for one without a name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub camera: Option<String>,
}

/// Answers [`REPORT_METHOD`].
fn report_method(In(params): In<Option<Value>>, report: TileFrameReportParam) -> BrpResult {
    let params: TileReportParams = match params {
        None | Some(Value::Null) => TileReportParams::default(),
        Some(value) => serde_json::from_value(value).map_err(|error| BrpError {
            code: error_codes::INVALID_PARAMS,
            message: format!("{REPORT_METHOD}: {error} (expected {{\"camera\": \"<Name>\"}})"),
            data: None,
        })?,
    };
    let mut report = report.collect();
    if let Some(name) = &params.camera {
        report.cameras.retain(|c| &c.name == name);
        if report.cameras.is_empty() {
            return Err(BrpError {
                code: error_codes::INVALID_PARAMS,
                message: format!("{REPORT_METHOD}: no active 3D camera named {name:?}"),
                data: None,
            });
        }
    }
    serde_json::to_value(&report).map_err(BrpError::internal)
}

/// Adds [`REPORT_METHOD`] to the app's BRP methods, when it has Bevy's `RemotePlugin` (after
/// every plugin's `build`: the game may add it after the crate's).
pub(crate) fn finish(app: &mut App) {
    let world = app.world_mut();
    if !world.contains_resource::<RemoteMethods>() {
        debug!(
            "bevy_tile_deferred: feature `remote` without Bevy's RemotePlugin: the frame report \
             is not served over BRP"
        );
        return;
    }
    let system = world.register_system(report_method);
    world
        .resource_mut::<RemoteMethods>()
        .insert(REPORT_METHOD, RemoteMethodSystemId::Instant(system));
}

/// Reads the [`TileFrameReport`] of the app serving BRP over HTTP at `address` (`host:port`,
/// e.g. `127.0.0.1:15702`): one blocking request, which gives up after `timeout`. Call it off
/// the main thread (the inspector does).
pub fn fetch_report(
    address: &str,
    params: &TileReportParams,
    timeout: Duration,
) -> Result<TileFrameReport, String> {
    let request = serde_json::json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": REPORT_METHOD,
        "params": params,
    })
    .to_string();
    let body = post(address, &request, timeout)?;
    let mut answer: Value =
        serde_json::from_str(&body).map_err(|e| format!("{address}: not JSON ({e})"))?;
    if let Some(error) = answer.get("error") {
        return Err(format!("{address}: {error}"));
    }
    let result = answer
        .get_mut("result")
        .map(Value::take)
        .ok_or_else(|| format!("{address}: an answer without a result"))?;
    serde_json::from_value(result).map_err(|e| format!("{address}: not a tile frame report ({e})"))
}

/// One HTTP/1.1 POST of `json` to `address`; the response's body.
fn post(address: &str, json: &str, timeout: Duration) -> Result<String, String> {
    let socket = address
        .to_socket_addrs()
        .map_err(|e| format!("{address}: {e}"))?
        .next()
        .ok_or_else(|| format!("{address}: no address"))?;
    let mut stream =
        TcpStream::connect_timeout(&socket, timeout).map_err(|e| format!("{address}: {e}"))?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .map_err(|e| format!("{address}: {e}"))?;
    let request = format!(
        "POST / HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{json}",
        json.len()
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("{address}: {e}"))?;
    let mut response = Vec::new();
    stream
        .read_to_end(&mut response)
        .map_err(|e| format!("{address}: {e}"))?;
    http_body(&response).map_err(|e| format!("{address}: {e}"))
}

/// The body of an HTTP/1.1 response with status 200: by `Content-Length`, chunked, or to the
/// end of the connection.
fn http_body(response: &[u8]) -> Result<String, String> {
    let text = String::from_utf8_lossy(response);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or("an HTTP response without headers")?;
    let status = head.lines().next().unwrap_or_default();
    if status.split_whitespace().nth(1) != Some("200") {
        return Err(format!("HTTP answer {status:?}"));
    }
    let header = |name: &str| {
        head.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then(|| value.trim().to_owned())
        })
    };
    if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        let mut out = String::new();
        let mut rest = body;
        loop {
            let (size, after) = rest.split_once("\r\n").ok_or("a truncated chunk")?;
            let size = usize::from_str_radix(size.trim(), 16).map_err(|e| e.to_string())?;
            if size == 0 {
                return Ok(out);
            }
            let chunk = after.get(..size).ok_or("a truncated chunk")?;
            out.push_str(chunk);
            rest = after.get(size + 2..).ok_or("a truncated chunk")?;
        }
    }
    match header("content-length").map(|v| v.parse::<usize>()) {
        Some(Ok(length)) => body
            .get(..length)
            .map(str::to_owned)
            .ok_or_else(|| "a body shorter than its Content-Length".to_owned()),
        Some(Err(e)) => Err(format!("a bad Content-Length ({e})")),
        None => Ok(body.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_bodies_are_read_by_length_chunks_or_to_the_end() {
        let by_length = b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\n{}{}extra";
        assert_eq!(http_body(by_length).unwrap(), "{}{}");
        let chunked =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n";
        assert_eq!(http_body(chunked).unwrap(), "{\"a\":1}");
        let to_end = b"HTTP/1.1 200 OK\r\n\r\n[1]";
        assert_eq!(http_body(to_end).unwrap(), "[1]");
        assert!(http_body(b"HTTP/1.1 404 Not Found\r\n\r\n").is_err());
        assert!(http_body(b"garbage").is_err());
    }

    #[test]
    fn an_unreachable_app_is_an_error_not_a_hang() {
        // Port 9 (discard) on loopback: refused at once where nothing listens.
        let started = std::time::Instant::now();
        let result = fetch_report(
            "127.0.0.1:9",
            &TileReportParams::default(),
            Duration::from_secs(2),
        );
        assert!(result.is_err());
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
