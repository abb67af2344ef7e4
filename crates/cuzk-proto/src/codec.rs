//! The protobuf codec of the generated stubs: prost's, except that a request that does not
//! parse is INVALID_ARGUMENT (the caller sent garbage) rather than tonic's INTERNAL (which
//! reads as a fault of the daemon).

use std::marker::PhantomData;
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder};
use tonic::{Code, Status};
use tonic_prost::{ProstDecoder, ProstEncoder};

/// Encodes `T`, decodes `U`, as `application/grpc+proto`.
#[derive(Debug, Clone)]
pub struct ProtoCodec<T, U> {
    _types: PhantomData<(T, U)>,
}

impl<T, U> Default for ProtoCodec<T, U> {
    fn default() -> Self {
        ProtoCodec {
            _types: PhantomData,
        }
    }
}

impl<T, U> Codec for ProtoCodec<T, U>
where
    T: prost::Message + Send + 'static,
    U: prost::Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = ProtoDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstEncoder::new(BufferSettings::default())
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProtoDecoder(ProstDecoder::new(BufferSettings::default()))
    }
}

/// prost's decoder with parse failures reported as INVALID_ARGUMENT.
#[derive(Debug)]
pub struct ProtoDecoder<U>(ProstDecoder<U>);

impl<U: prost::Message + Default> Decoder for ProtoDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        self.0.decode(buf).map_err(|status| {
            if status.code() == Code::Internal {
                Status::invalid_argument(format!("malformed message: {}", status.message()))
            } else {
                status
            }
        })
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.0.buffer_settings()
    }
}
