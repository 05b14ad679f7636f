//! Behaviour of the public API beyond vLLM parity: errors instead of panics, and the
//! allocation-free calls agreeing with the allocating ones.

use std::sync::Arc;

use vllm_detok::{DecodeOptions, Error, FinishKind, HfTokenizer, IncrementalDecoder, Tokenizer};

fn tiny() -> Arc<dyn Tokenizer> {
    let json = include_bytes!("data/tiny_byte_level.json");
    Arc::new(HfTokenizer::from_bytes(json).unwrap())
}

#[test]
fn tiny_tokenizer_uses_the_decode_table() {
    assert!(tiny().decode_table().is_some());
}

#[test]
fn empty_stop_string_is_an_error() {
    for stop in [vec![String::new()], vec!["a".into(), String::new()]] {
        let options = DecodeOptions {
            stop,
            ..DecodeOptions::default()
        };
        assert!(matches!(
            IncrementalDecoder::new(tiny(), &[], options),
            Err(Error::EmptyStopString)
        ));
    }
}

#[test]
fn pushing_after_the_end_is_an_error() {
    let mut decoder = IncrementalDecoder::new(tiny(), &[], DecodeOptions::default()).unwrap();
    let delta = decoder.finish(&[0, 3], FinishKind::StopToken).unwrap();
    assert_eq!(delta.text, "he");
    assert!(delta.finished && decoder.is_finished());
    assert!(matches!(decoder.push(&[1]), Err(Error::Finished)));
    assert!(matches!(
        decoder.finish(&[], FinishKind::Abort),
        Err(Error::Finished)
    ));
}

#[test]
fn unknown_ids_decode_to_nothing() {
    let mut decoder =
        IncrementalDecoder::new(tiny(), &[u32::MAX, 7], DecodeOptions::default()).unwrap();
    assert_eq!(decoder.push(&[u32::MAX, 0, 99]).unwrap().text, "he");
}

#[test]
fn stop_string_cut_and_tokens_kept() {
    // "he" "l" "lo" "he": the stop string "llo" completes in the third token of one push.
    let options = DecodeOptions {
        stop: vec!["llo".into()],
        ..DecodeOptions::default()
    };
    let mut decoder = IncrementalDecoder::new(tiny(), &[], options).unwrap();
    let delta = decoder.push(&[0, 1, 2, 0]).unwrap();
    assert_eq!(delta.text, "he");
    let stop = delta.stop.unwrap();
    assert_eq!((stop.index, stop.text_len, stop.tokens_kept), (0, 2, 3));
    assert_eq!(decoder.num_output_tokens(), 3);
}

#[test]
fn into_calls_match_allocating_calls() {
    let options = DecodeOptions {
        stop: vec!["ole".into()],
        ..DecodeOptions::default()
    };
    let mut a = IncrementalDecoder::new(tiny(), &[], options.clone()).unwrap();
    let mut b = IncrementalDecoder::new(tiny(), &[], options).unwrap();
    let mut text = String::new();
    let mut expected = String::new();
    for id in [0, 1, 2, 1, 0] {
        expected.push_str(&a.push(&[id]).unwrap().text);
        assert!(b.push_into(&[id], &mut text).unwrap().is_none());
    }
    expected.push_str(&a.finish(&[], FinishKind::Length).unwrap().text);
    b.finish_into(&[], FinishKind::Length, &mut text).unwrap();
    assert_eq!(text, expected);
    assert_eq!(text, "hellolhe");
}

#[test]
fn decoders_can_move_between_threads() {
    fn assert_send<T: Send + 'static>() {}
    assert_send::<IncrementalDecoder>();
    assert_send::<vllm_detok::LogprobText>();
    assert_send::<Arc<HfTokenizer>>();
}
