//! gzip and zstd streams decompressed as they are read. A stream that breaks off or is corrupt
//! fails with where: the compressed bytes read from the file and the decompressed bytes given
//! out before it, so that a truncated download is told from a bad record.

use std::io::{self, Read};

use super::detect::Compression;
use super::progress::Progress;

/// A decoder whose errors say where the stream failed.
struct Located<D> {
    decoder: D,
    what: &'static str,
    /// The compressed bytes read from the file.
    compressed: Progress,
    decompressed: u64,
}

impl<D: Read> Read for Located<D> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.decoder.read(buf) {
            Ok(n) => {
                self.decompressed += n as u64;
                Ok(n)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Err(e),
            Err(e) => Err(io::Error::new(
                e.kind(),
                format!(
                    "truncated or corrupt {} stream after byte {} of the file ({} bytes \
                     decompressed): {e}",
                    self.what,
                    self.compressed.position(),
                    self.decompressed
                ),
            )),
        }
    }
}

/// `reader` decompressed as `compression` says.
pub fn decompressed(
    reader: Box<dyn Read + Send>,
    compression: Compression,
) -> io::Result<Box<dyn Read + Send>> {
    let compressed = Progress::new(None);
    let counting = |reader| io::BufReader::with_capacity(1 << 16, compressed.counting(reader));
    let (decoder, what): (Box<dyn Read + Send>, _) = match compression {
        Compression::None => return Ok(reader),
        Compression::Gzip => (
            Box::new(flate2::bufread::MultiGzDecoder::new(counting(reader))),
            "gzip",
        ),
        Compression::Zstd => (
            Box::new(zstd::stream::read::Decoder::with_buffer(counting(reader))?),
            "zstd",
        ),
    };
    Ok(Box::new(Located {
        decoder,
        what,
        compressed,
        decompressed: 0,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn read_all(bytes: Vec<u8>, c: Compression) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        decompressed(Box::new(io::Cursor::new(bytes)), c)?.read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn whole_streams_and_concatenations_read_back() {
        let mut two = gzip(b"one\n");
        two.extend(gzip(b"two\n"));
        assert_eq!(read_all(two, Compression::Gzip).unwrap(), b"one\ntwo\n");
        let mut z = zstd::encode_all(&b"a\n"[..], 3).unwrap();
        z.extend(zstd::encode_all(&b"b\n"[..], 3).unwrap());
        assert_eq!(read_all(z, Compression::Zstd).unwrap(), b"a\nb\n");
    }

    #[test]
    fn truncated_streams_fail_with_their_offset() {
        let data: Vec<u8> = (0..20_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let g = gzip(&data);
        let cut = g.len() - 9;
        let e = read_all(g[..cut].to_vec(), Compression::Gzip).unwrap_err();
        let want = format!("truncated or corrupt gzip stream after byte {cut} of the file");
        assert!(e.to_string().starts_with(&want), "{e}");
        let z = zstd::encode_all(&data[..], 3).unwrap();
        let cut = z.len() / 2;
        let e = read_all(z[..cut].to_vec(), Compression::Zstd).unwrap_err();
        let want = format!("truncated or corrupt zstd stream after byte {cut} of the file");
        assert!(e.to_string().starts_with(&want), "{e}");
    }
}
