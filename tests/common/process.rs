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

/// Runs `cmd` to its end with stdout and stderr captured, like [`std::process::Command::output`],
/// but kills it (SIGKILL) and returns `None` if it has not ended after `limit`: a hang is an
/// outcome a test reports, not one that blocks the suite.
pub fn output_within(
    cmd: &mut std::process::Command,
    limit: std::time::Duration,
) -> Option<std::process::Output> {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the child process");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            buf
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let err = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            break Some(status);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    let stdout = out.join().expect("stdout reader");
    let stderr = err.join().expect("stderr reader");
    status.map(|status| std::process::Output {
        status,
        stdout,
        stderr,
    })
}
