//! Telling text from binary, and UTF-8 from the legacy encodings files in
//! Chinese, Japanese and Korean projects still use (GBK, Big5, `Shift_JIS`,
//! EUC-KR): such a file is decoded for reading, named, and never passed
//! off as UTF-8.

use encoding_rs::{
    BIG5, EUC_JP, EUC_KR, Encoding, GBK, SHIFT_JIS, UTF_16BE, UTF_16LE, WINDOWS_1252,
};

/// What a file's bytes are.
#[derive(Debug, PartialEq, Eq)]
pub enum Text {
    /// UTF-8 (or ASCII).
    Utf8(String),
    /// Text in another encoding, decoded.
    Decoded {
        /// The text.
        text: String,
        /// The encoding it looks like (`GBK`, `Big5`, ...).
        encoding: &'static str,
    },
    /// Not text: a NUL byte near the start, and no UTF-16 mark.
    Binary,
}

/// Bytes looked at for a NUL.
const SNIFF: usize = 8192;

/// Legacy CJK encodings tried, most common among our users first. Korean
/// EUC-KR text is usually taken for a Chinese encoding: they share their
/// byte ranges, and telling them apart would take frequency tables. The
/// file is then named wrongly, but never changed.
const CANDIDATES: &[(&Encoding, &str)] = &[
    (GBK, "GBK"),
    (BIG5, "Big5"),
    (SHIFT_JIS, "Shift_JIS"),
    (EUC_KR, "EUC-KR"),
    (EUC_JP, "EUC-JP"),
];

/// Reads `bytes` as text.
pub fn decode(bytes: &[u8]) -> Text {
    for (bom, encoding, name) in [
        (&[0xFF, 0xFE][..], UTF_16LE, "UTF-16LE"),
        (&[0xFE, 0xFF][..], UTF_16BE, "UTF-16BE"),
    ] {
        if let Some(rest) = bytes.strip_prefix(bom)
            && let Some(text) = encoding.decode_without_bom_handling_and_without_replacement(rest)
        {
            return Text::Decoded {
                text: text.into_owned(),
                encoding: name,
            };
        }
    }
    if bytes[..bytes.len().min(SNIFF)].contains(&0) {
        return Text::Binary;
    }
    if let Ok(text) = std::str::from_utf8(bytes) {
        return Text::Utf8(text.to_owned());
    }
    let best = CANDIDATES
        .iter()
        .filter_map(|(encoding, name)| {
            // A file cut at a size limit may end inside a character.
            let strict =
                |bytes| encoding.decode_without_bom_handling_and_without_replacement(bytes);
            let text = strict(bytes).or_else(|| strict(&bytes[..bytes.len() - 1]))?;
            // Text in Big5 or Shift_JIS decodes as GBK too, into rare
            // characters outside GB2312's rows: those count against it.
            let score = if *name == "GBK" {
                plausible(&text) * gb2312_share(bytes)
            } else {
                plausible(&text)
            };
            Some((score, text.into_owned(), *name))
        })
        // The first of equals wins: the candidates are in order of use.
        .fold(None, |best: Option<(f64, String, &str)>, next| match best {
            Some(best) if best.0 >= next.0 => Some(best),
            _ => Some(next),
        });
    match best {
        Some((score, text, encoding)) if score >= 0.8 => Text::Decoded { text, encoding },
        _ => Text::Decoded {
            text: WINDOWS_1252
                .decode_without_bom_handling(bytes)
                .0
                .into_owned(),
            encoding: "Windows-1252 (Latin-1)",
        },
    }
}

/// `bytes` as UTF-8 text that `tool` may change, or why it may not: a
/// binary file, or text in another encoding, which a change written back
/// as UTF-8 would re-encode whole.
pub fn changeable(tool: &str, path: &str, bytes: Vec<u8>) -> Result<String, String> {
    match String::from_utf8(bytes) {
        Ok(text) => Ok(text),
        Err(error) => Err(match decode(error.as_bytes()) {
            Text::Binary => format!("`{path}` is a binary file; {tool} changes text files only"),
            Text::Decoded { encoding, .. } => format!(
                "`{path}` is {encoding} text, not UTF-8: {tool} writes UTF-8, which would \
                 re-encode the whole file, and write would too. Leave it unchanged, or tell the \
                 user it would need converting (for example `iconv -f {} -t UTF-8`).",
                iconv_name(encoding)
            ),
            Text::Utf8(_) => format!("`{path}` is not UTF-8 text"),
        }),
    }
}

/// The share of `bytes`' double-byte pairs in GB2312's rows (lead and
/// trail both `A1`–`FE`, lead at most `F7`): nearly all of real Chinese
/// text, few of other encodings read as GBK.
fn gb2312_share(bytes: &[u8]) -> f64 {
    let (mut inside, mut pairs) = (0u32, 0u32);
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] < 0x80 {
            i += 1;
            continue;
        }
        if let Some(&trail) = bytes.get(i + 1) {
            pairs += 1;
            if (0xA1..=0xF7).contains(&bytes[i]) && (0xA1..=0xFE).contains(&trail) {
                inside += 1;
            }
        }
        i += 2;
    }
    f64::from(inside) / f64::from(pairs.max(1))
}

/// `iconv`'s name for an encoding named here.
fn iconv_name(encoding: &str) -> &str {
    match encoding {
        "Windows-1252 (Latin-1)" => "WINDOWS-1252",
        other => other,
    }
}

/// The share of non-ASCII characters that are common letters of East
/// Asian scripts or their punctuation: high for the right decoding, low
/// for a wrong one (which yields rare symbols and odd ideographs mixed
/// with half-width katakana and the like).
fn plausible(text: &str) -> f64 {
    let (mut common, mut all) = (0u32, 0u32);
    for c in text.chars().filter(|c| !c.is_ascii()) {
        all += 1;
        if matches!(u32::from(c),
            0x3000..=0x303F     // CJK punctuation
            | 0x3040..=0x30FF   // hiragana, katakana
            | 0x4E00..=0x9FFF   // CJK ideographs
            | 0xAC00..=0xD7A3   // hangul syllables
            | 0xFF01..=0xFF5E)
        // full-width forms
        {
            common += 1;
        }
    }
    f64::from(common) / f64::from(all.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(text: &str, encoding: &'static Encoding) -> Vec<u8> {
        encoding.encode(text).0.into_owned()
    }

    #[test]
    fn utf8_binary_and_utf16_are_told_apart() {
        assert_eq!(decode("你好\n".as_bytes()), Text::Utf8("你好\n".into()));
        assert_eq!(decode(b"\x7fELF\x02\x01\x01\0\0\0"), Text::Binary);
        let mut utf16 = vec![0xFF, 0xFE];
        for unit in "hi 你好".encode_utf16() {
            utf16.extend(unit.to_le_bytes());
        }
        assert_eq!(
            decode(&utf16),
            Text::Decoded {
                text: "hi 你好".into(),
                encoding: "UTF-16LE"
            }
        );
    }

    #[test]
    fn a_short_gbk_text_is_gbk_though_other_encodings_decode_it_too() {
        let short = "# 配置文件\nport = 8080 # 服务器端口\n";
        assert_eq!(
            decode(&encoded(short, GBK)),
            Text::Decoded {
                text: short.into(),
                encoding: "GBK"
            }
        );
    }

    #[test]
    fn big5_is_not_taken_for_gbk() {
        let traditional = "# 這是一個設定檔，請在這裡設定伺服器的連接埠與記錄層級。\n";
        assert_eq!(
            decode(&encoded(traditional, BIG5)),
            Text::Decoded {
                text: traditional.into(),
                encoding: "Big5"
            }
        );
    }

    #[test]
    fn legacy_cjk_files_are_named_and_decoded() {
        let chinese = "// 这是一个配置文件，用于设置服务器的端口和日志级别。\nport = 8080\n";
        assert_eq!(
            decode(&encoded(chinese, GBK)),
            Text::Decoded {
                text: chinese.into(),
                encoding: "GBK"
            }
        );
        let japanese = "# 設定ファイルです。サーバーのポートを指定してください。\n";
        assert_eq!(
            decode(&encoded(japanese, SHIFT_JIS)),
            Text::Decoded {
                text: japanese.into(),
                encoding: "Shift_JIS"
            }
        );
        let latin = b"caf\xe9 na\xefve\n";
        assert!(matches!(
            decode(latin),
            Text::Decoded { encoding: "Windows-1252 (Latin-1)", text } if text == "café naïve\n"
        ));
    }
}
