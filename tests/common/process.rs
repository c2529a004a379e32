//! Killing a child process that acknowledges its work on stdout, without losing an
//! acknowledgement.

use std::io::{BufRead, BufReader};
use std::process::Child;

/// Reads `child`'s piped stdout line by line, passing each line (without its newline) to
/// `on_line` until that returns false or the output ends; then kills the child with SIGKILL,
/// reads the pipe to its end, passing on every further line the child finished writing before
/// it died (`on_line`'s answer no longer matters), and reaps the child.
///
/// Reading on after the kill is what makes the count exact. A child that prints a line only
/// after an operation has returned has acknowledged everything it printed, whether or not the
/// parent had read it yet when the kill landed; stopping at the kill would count the lines
/// still in the pipe as never acknowledged. A last line without its newline was cut short by
/// the kill, so the child had not finished acknowledging it: it is dropped.
pub fn read_then_kill(child: &mut Child, mut on_line: impl FnMut(&str) -> bool) {
    let stdout = child
        .stdout
        .take()
        .expect("the child's stdout must be piped");
    let mut reader = BufReader::new(stdout);
    let mut buf = Vec::new();
    let mut next_line = || -> Option<String> {
        buf.clear();
        reader.read_until(b'\n', &mut buf).unwrap();
        // Empty: the output ended. No newline: the last line, cut short by the kill.
        buf.pop_if(|b| *b == b'\n')?;
        Some(String::from_utf8(buf.clone()).unwrap())
    };
    while let Some(line) = next_line() {
        if !on_line(&line) {
            break;
        }
    }
    child.kill().unwrap(); // SIGKILL
    while let Some(line) = next_line() {
        on_line(&line);
    }
    child.wait().unwrap();
}
